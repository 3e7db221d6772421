-- SPDX-License-Identifier: Apache-2.0
-- Schema version 24: the queue's cycle cheaper (docs/benchmarks.md), rules and refusals unchanged.
--
-- idempo.ms_at was declared IMMUTABLE over timestamptz + interval, which is STABLE, so the
-- planner never inlined it: each of its four calls in a send, read and ack cycle ran through the
-- SQL function machinery (about 17 µs a call). Declared as what it is, it is inlined.
ALTER FUNCTION idempo.ms_at(bigint) STABLE;
