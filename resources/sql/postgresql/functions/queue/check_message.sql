-- SPDX-License-Identifier: Apache-2.0

-- Raises ID002 / ID003 unless `p_message` is JSON and `p_headers` NULL, '' or a JSON object.
CREATE OR REPLACE FUNCTION idempo.check_message(p_message text, p_headers text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM idempo.check_json(p_message, 'p_message', 1048576);
    IF coalesce(p_headers, '') <> '' THEN
        PERFORM idempo.check_json(p_headers, 'p_headers', 1048576);
        IF jsonb_typeof(p_headers::jsonb) <> 'object' THEN
            PERFORM idempo.raise('ID002', 'p_headers must be a JSON object');
        END IF;
    END IF;
END
$$;

SELECT idempo.grant_execute('idempo.check_message(text,text)');
