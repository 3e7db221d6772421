-- SPDX-License-Identifier: Apache-2.0

-- Raises ID004 unless `p_read_ct` is NULL (any read) or names a read (1 or more).
CREATE OR REPLACE FUNCTION idempo.check_read_ct(p_read_ct integer, p_required boolean) RETURNS void
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF (p_read_ct IS NULL AND p_required) OR p_read_ct < 1 THEN
        PERFORM idempo.raise('ID004', 'p_read_ct (the read_ct the read answered, 1 or more) must be given, not '
                                      || coalesce(p_read_ct::text, 'NULL'));
    END IF;
END
$$;

SELECT idempo.grant_execute('idempo.check_read_ct(integer,boolean)');
