-- SPDX-License-Identifier: Apache-2.0

CREATE OR REPLACE FUNCTION idempo.answer(o idempo.operations) RETURNS idempo.operation_answer LANGUAGE sql STABLE
RETURN ROW(o.id, o.namespace, o.operation_key, o.run_id, o.step_id, o.target, o.tool_kind, o.state, o.payload,
           o.payload_fingerprint, o.fingerprint_fields, o.attempt, o.max_attempts, o.lease_owner,
           o.lease_expires_at_ms, o.fencing_token, o.next_attempt_at_ms, o.error_class, o.error_detail, o.result,
           o.receipt, o.created_at_ms, o.updated_at_ms, o.retention_expires_at_ms, o.operation_version,
           o.schema_version, o.value_minor, o.value_currency)::idempo.operation_answer;

SELECT idempo.grant_execute('idempo.answer(operations)');
