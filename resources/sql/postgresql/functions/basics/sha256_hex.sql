-- SPDX-License-Identifier: Apache-2.0

-- Lowercase hex SHA-256 of text's UTF-8 bytes.
CREATE OR REPLACE FUNCTION idempo.sha256_hex(p_text text) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
RETURN pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(p_text, 'UTF8')), 'hex');

SELECT idempo.grant_execute('idempo.sha256_hex(text)', 'idempo_admin', 'idempo_approver', 'idempo_operator', 'idempo_viewer', 'idempo_worker');
