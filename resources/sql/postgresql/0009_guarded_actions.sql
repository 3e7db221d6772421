-- SPDX-License-Identifier: Apache-2.0
-- Schema version 9: guarded actions as functions (docs/sql-api.md): approve / reject,
-- reconcile, DLQ replay (begin, finish; the requeue is idempo.queue_requeue_dead_letter) and
-- guard settings. Each checks its rules under the operation's row lock (four-eyes by login,
-- approval idempotency by approval id, state and lease), writes its change and appends its
-- audit record in one transaction; the audit log grows only through them.

CREATE TYPE idempo.approval_answer AS (
    status text, approval_id text, namespace text, operation_key text, revision integer, decision text, reason text,
    operator text, role text, external_reference text, proposal text, approval_status text, operation_version bigint,
    created_at_ms bigint, audit_seq bigint);

CREATE TYPE idempo.action_answer AS (from_state text, to_state text, audit_seq bigint);

