-- SPDX-License-Identifier: Apache-2.0

-- Raises 42501 unless the acting role is one of `p_roles`; ID008 unless a reason is given.
CREATE OR REPLACE FUNCTION idempo.require_role(p_role text, p_roles text[], p_what text, p_groups text, p_reason text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF NOT p_role = ANY (p_roles) THEN
        PERFORM idempo.raise('ID008', 'role ''' || p_role || ''' may not ' || p_what || ': that needs ' || p_groups);
    END IF;
    IF p_reason IS NULL OR p_reason = '' THEN
        PERFORM idempo.raise('ID008', 'a reason is required');
    END IF;
    IF octet_length(p_reason) > 65536 THEN
        PERFORM idempo.raise('ID003', 'p_reason holds at most 65536 bytes');
    END IF;
END
$$;

SELECT idempo.grant_execute('idempo.require_role(text,text[],text,text,text)');
