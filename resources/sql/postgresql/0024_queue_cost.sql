-- SPDX-License-Identifier: Apache-2.0
-- Schema version 24: the queue's cycle cheaper (docs/benchmarks.md), rules and refusals unchanged.
--
-- Functions only (functions/queue/, functions/values/ms_at.sql, declared STABLE as it is).

