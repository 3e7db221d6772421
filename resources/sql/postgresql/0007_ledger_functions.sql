-- SPDX-License-Identifier: Apache-2.0
-- Schema version 7: the ledger's writes as functions (docs/sql-api.md): claim, transition and
-- its worker forms complete / fail / heartbeat, and the owner's purge. The rules are those of
-- ledgerrules.h and transitiontable.cpp, enforced here for every client; the contract suites
-- hold the embedded ledger and these functions equal.

-- An operation as the functions answer it: the columns of idempo.operations a client reads.
CREATE TYPE idempo.operation_answer AS (
    id bigint, namespace text, operation_key text, run_id text, step_id text, target text, tool_kind text,
    state text, payload text, payload_fingerprint text, fingerprint_fields text, attempt integer,
    max_attempts integer, lease_owner text, lease_expires_at_ms bigint, fencing_token bigint,
    next_attempt_at_ms bigint, error_class text, error_detail text, result text, receipt text,
    created_at_ms bigint, updated_at_ms bigint, retention_expires_at_ms bigint, operation_version bigint,
    schema_version integer, value_minor bigint, value_currency text);

-- A claim's answer: its outcome and the record as it stands after the claim.
CREATE TYPE idempo.claim_answer AS (
    outcome text,
    id bigint, namespace text, operation_key text, run_id text, step_id text, target text, tool_kind text,
    state text, payload text, payload_fingerprint text, fingerprint_fields text, attempt integer,
    max_attempts integer, lease_owner text, lease_expires_at_ms bigint, fencing_token bigint,
    next_attempt_at_ms bigint, error_class text, error_detail text, result text, receipt text,
    created_at_ms bigint, updated_at_ms bigint, retention_expires_at_ms bigint, operation_version bigint,
    schema_version integer, value_minor bigint, value_currency text);

-- The change feed of live views (idempo.wait_for_changes): every write stamps the record with
-- its transaction's id, and a reader asks which records a transaction it could not see yet
-- has written since. Nothing is locked or notified at commit, so writers never queue behind
-- one another for it (NOTIFY takes a database-wide lock at commit).
ALTER TABLE idempo.operations ADD COLUMN changed_xid xid8;
CREATE INDEX operations_changed ON idempo.operations (changed_xid) WHERE changed_xid IS NOT NULL;

