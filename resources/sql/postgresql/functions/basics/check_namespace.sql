-- SPDX-License-Identifier: Apache-2.0

-- Raises ID001 unless `p_namespace` is 1..63 bytes of letters, digits, '.', '_' and '-'.
CREATE OR REPLACE FUNCTION idempo.check_namespace(p_namespace text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_namespace IS NULL THEN
        PERFORM idempo.raise('ID004', 'p_namespace must not be NULL');
    ELSIF p_namespace !~ '^[A-Za-z0-9._-]{1,63}$' THEN
        PERFORM idempo.raise('ID001', 'p_namespace must be 1..63 bytes of letters, digits, ''.'', ''_'' and ''-'', not '
                                      || to_json(left(p_namespace, 80))::text);
    END IF;
END
$$;

SELECT idempo.grant_execute('idempo.check_namespace(text)');
