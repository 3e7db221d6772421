-- SPDX-License-Identifier: Apache-2.0

-- Raises ID003 / ID002 naming the argument unless `p_text` is JSON of at most `p_max_bytes`.
CREATE OR REPLACE FUNCTION idempo.check_json(p_text text, p_argument text, p_max_bytes integer) RETURNS void
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_text IS NULL THEN
        PERFORM idempo.raise('ID004', p_argument || ' must not be NULL');
    ELSIF octet_length(p_text) > p_max_bytes THEN
        PERFORM idempo.raise('ID003', p_argument || ' is ' || octet_length(p_text) || ' bytes; the limit is ' || p_max_bytes || ' bytes');
    ELSIF NOT idempo.is_json(p_text) THEN
        PERFORM idempo.raise('ID002', p_argument || ' is not JSON text');
    END IF;
END
$$;

SELECT idempo.grant_execute('idempo.check_json(text,text,integer)');
