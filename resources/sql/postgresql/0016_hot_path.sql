-- SPDX-License-Identifier: Apache-2.0
-- Schema 16: the hot path in fewer statements (docs/benchmarks.md). Same signatures, same rules,
-- same refusals; what changes is how many statements and nested calls a call runs.
--
-- idempo.claim: a key the first read does not find is inserted at once (a conflict sends the
-- claim to the locked path as before); a claim that charges nothing passes its run on one read;
-- the payload is parsed only when it is not the recorded payload again (same SHA-256).
-- idempo.transition: one statement that compares state and token, moves and appends the
-- history event; a refusal is judged on the locked record as before. A new record and its first
-- event are one statement too, and a NULL result or receipt is not parsed (it was, inside an
-- exception block, for nothing). Queue send, read and ack: the registry read, the clock and the
-- message checks inline, the JSON text parsed once.

-- Fewer index entries per write. operations_state_value served no query: the value listing
-- orders by coalesce(value_minor, ...) DESC, id, which that index cannot give, and filters the
-- state with operations_state_id. A listing by state walks operations_state_id for the rarer
-- states and the primary key for succeeded (the common state, ORDER BY id), so succeeded
-- records, most of a ledger, no longer get an entry in it: completing an operation writes
-- two index entries fewer.
DROP INDEX idempo.operations_state_value;
DROP INDEX idempo.operations_state_id;
CREATE INDEX operations_state_id ON idempo.operations (state, id) WHERE state <> 'succeeded';
