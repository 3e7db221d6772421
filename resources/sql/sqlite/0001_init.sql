-- SPDX-License-Identifier: Apache-2.0
-- Embedded ledger, schema version 1. Times are milliseconds since the Unix epoch (UTC).
-- Statements are separated by lines holding only ';'-terminated SQL.
CREATE TABLE fencing_sequence (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    last_token INTEGER NOT NULL
);
INSERT INTO fencing_sequence (id, last_token) VALUES (1, 0);
CREATE TABLE operations (
    id INTEGER PRIMARY KEY,
    namespace TEXT NOT NULL,
    operation_key TEXT NOT NULL,
    run_id TEXT NOT NULL DEFAULT '',
    step_id TEXT NOT NULL DEFAULT '',
    target TEXT NOT NULL DEFAULT '',
    tool_kind TEXT NOT NULL,
    state TEXT NOT NULL,
    payload TEXT NOT NULL,
    payload_fingerprint TEXT NOT NULL,
    fingerprint_fields TEXT NOT NULL DEFAULT '[]',
    attempt INTEGER NOT NULL DEFAULT 0,
    max_attempts INTEGER NOT NULL,
    lease_owner TEXT NOT NULL DEFAULT '',
    lease_expires_at_ms INTEGER,
    fencing_token INTEGER NOT NULL,
    next_attempt_at_ms INTEGER,
    error_class TEXT,
    error_detail TEXT NOT NULL DEFAULT '',
    result TEXT NOT NULL DEFAULT '',
    receipt TEXT NOT NULL DEFAULT '',
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    retention_expires_at_ms INTEGER,
    operation_version INTEGER NOT NULL DEFAULT 1,
    schema_version INTEGER NOT NULL,
    UNIQUE (namespace, operation_key)
);
CREATE INDEX operations_state_id ON operations (state, id);
CREATE INDEX operations_run_id ON operations (run_id, id);
CREATE INDEX operations_retention ON operations (retention_expires_at_ms)
    WHERE retention_expires_at_ms IS NOT NULL;
CREATE TABLE operation_events (
    id INTEGER PRIMARY KEY,
    operation_id INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    from_state TEXT,
    to_state TEXT NOT NULL,
    fencing_token INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    actor TEXT NOT NULL DEFAULT '',
    error_class TEXT,
    detail TEXT NOT NULL DEFAULT ''
);
CREATE INDEX operation_events_operation ON operation_events (operation_id, id);
CREATE TABLE suppressions (
    id INTEGER PRIMARY KEY,
    namespace TEXT NOT NULL,
    operation_key TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    outcome TEXT NOT NULL,
    state TEXT NOT NULL,
    source TEXT NOT NULL DEFAULT '',
    fingerprint TEXT NOT NULL
);
CREATE INDEX suppressions_at ON suppressions (at_ms);
