-- SPDX-License-Identifier: Apache-2.0

-- Raises ID001 (or ID004 for NULL) naming the argument unless `p_value` is a valid identifier;
-- `p_required`: it must not be empty either.
CREATE OR REPLACE FUNCTION idempo.check_identifier(p_value text, p_argument text, p_required boolean, p_max_bytes integer)
    RETURNS void LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_value IS NULL THEN
        PERFORM idempo.raise('ID004', p_argument || ' must not be NULL');
    ELSIF p_required AND p_value = '' THEN
        PERFORM idempo.raise('ID001', p_argument || ' is empty');
    ELSIF octet_length(p_value) > p_max_bytes THEN
        PERFORM idempo.raise('ID001', p_argument || ' is ' || octet_length(p_value) || ' bytes; the limit is ' || p_max_bytes);
    ELSIF NOT idempo.is_printable(p_value, p_max_bytes) THEN
        PERFORM idempo.raise('ID001', p_argument || ' starts or ends with white space or holds an unprintable character');
    END IF;
END
$$;

SELECT idempo.grant_execute('idempo.check_identifier(text,text,boolean,integer)');
