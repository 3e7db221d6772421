-- SPDX-License-Identifier: Apache-2.0
-- Schema version 10: the claim path's helpers made cheap (docs/benchmarks.md). A SQL function
-- the planner cannot inline is planned again on every call from PL/pgSQL: sha256_hex was
-- declared IMMUTABLE over the STABLE convert_to, which forbids inlining (58 µs a call), and
-- same_projection carried a SET clause (117 µs a call, on every claim of a recorded key).

