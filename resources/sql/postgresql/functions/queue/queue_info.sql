-- SPDX-License-Identifier: Apache-2.0

-- The registry row of `p_queue`, after checking its name; raises ID004 for a bad name, ID005
-- for an unknown queue.
CREATE OR REPLACE FUNCTION idempo.queue_info(p_queue text) RETURNS idempo.queue_registry
    LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    info idempo.queue_registry%ROWTYPE;
BEGIN
    IF p_queue IS NULL OR p_queue !~ '^[a-z][a-z0-9_]{0,46}$' THEN
        PERFORM idempo.raise('ID004', 'p_queue must be 1..47 characters of lowercase letters, digits and ''_'' starting with '
                                      'a letter, not ' || coalesce(to_json(left(p_queue, 80))::text, 'NULL'));
    END IF;
    SELECT * INTO info FROM idempo.queue_registry AS r WHERE r.queue_name = p_queue;
    IF NOT FOUND THEN
        PERFORM idempo.raise('ID005', 'no queue ''' || p_queue || '''');
    END IF;
    RETURN info;
END
$$;

SELECT idempo.grant_execute('idempo.queue_info(text)');
