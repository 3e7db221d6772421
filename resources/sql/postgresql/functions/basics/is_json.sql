-- SPDX-License-Identifier: Apache-2.0

-- True when `p_text` is JSON text (RFC 8259 syntax; the engine's stricter I-JSON rules and the
-- canonical form are the caller's part of the contract).
CREATE OR REPLACE FUNCTION idempo.is_json(p_text text) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM p_text::json;
    RETURN true;
EXCEPTION WHEN invalid_text_representation THEN
    RETURN false;
END
$$;

SELECT idempo.grant_execute('idempo.is_json(text)', 'idempo_admin', 'idempo_approver', 'idempo_operator', 'idempo_viewer', 'idempo_worker');
