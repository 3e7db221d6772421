-- SPDX-License-Identifier: Apache-2.0

-- An instant of the ledger's clock as ISO 8601 UTC text, for messages.
CREATE OR REPLACE FUNCTION idempo.iso_utc(p_ms bigint) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
RETURN pg_catalog.to_char(idempo.ms_at(p_ms) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"');

SELECT idempo.grant_execute('idempo.iso_utc(bigint)');
