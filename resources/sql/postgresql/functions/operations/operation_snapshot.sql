-- SPDX-License-Identifier: Apache-2.0

-- An operation's state as an audit record keeps it (auditchain.h operationSnapshot): RFC 8785
-- text of {attempt, error_class, fencing_token, max_attempts, receipt, state, version}.
CREATE OR REPLACE FUNCTION idempo.operation_snapshot(o idempo.operations) RETURNS text LANGUAGE sql STABLE
RETURN '{"attempt":' || o.attempt::text
    || ',"error_class":' || coalesce(pg_catalog.to_json(o.error_class)::text, 'null')
    || ',"fencing_token":' || o.fencing_token::text
    || ',"max_attempts":' || o.max_attempts::text
    || ',"receipt":' || pg_catalog.to_json(o.receipt)::text
    || ',"state":' || pg_catalog.to_json(o.state)::text
    || ',"version":' || o.operation_version::text || '}';

SELECT idempo.grant_execute('idempo.operation_snapshot(operations)');
