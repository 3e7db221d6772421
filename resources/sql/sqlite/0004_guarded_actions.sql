-- SPDX-License-Identifier: Apache-2.0
-- Guarded actions, schema version 4: approvals, the hash-chained audit log and guard settings.
-- Times are milliseconds since the Unix epoch (UTC). A trigger is one line: statements are split
-- at lines ending in ';'.
CREATE TABLE approvals (
    approval_id TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    operation_key TEXT NOT NULL,
    revision INTEGER NOT NULL,
    decision TEXT NOT NULL CHECK (decision IN ('redispatch', 'confirm', 'reject')),
    reason TEXT NOT NULL CHECK (length(reason) > 0),
    operator TEXT NOT NULL,
    role TEXT NOT NULL,
    external_reference TEXT NOT NULL DEFAULT '',
    proposal TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('applied', 'pending', 'seconded')),
    operation_version INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL
);
CREATE INDEX approvals_operation ON approvals (namespace, operation_key, revision);
-- One applied decision per (operation, revision).
CREATE UNIQUE INDEX approvals_applied_once ON approvals (namespace, operation_key, revision)
    WHERE status = 'applied';
CREATE TABLE audit_log (
    seq INTEGER PRIMARY KEY,
    at_ms INTEGER NOT NULL,
    who TEXT NOT NULL,
    role TEXT NOT NULL,
    action TEXT NOT NULL,
    target TEXT NOT NULL,
    reason TEXT NOT NULL DEFAULT '',
    before_state TEXT NOT NULL DEFAULT '',
    after_state TEXT NOT NULL DEFAULT '',
    approval_id TEXT NOT NULL DEFAULT '',
    detail TEXT NOT NULL DEFAULT '',
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX audit_log_target ON audit_log (target, seq);
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log BEGIN SELECT RAISE(ABORT, 'audit_log is append-only'); END;
CREATE TABLE guard_settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
