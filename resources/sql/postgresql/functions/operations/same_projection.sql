-- SPDX-License-Identifier: Apache-2.0

-- Equal texts answer at once; only differing projections are compared as sets. No role may
-- execute it (callers are this schema's SECURITY DEFINER functions, whose search_path is fixed),
-- and every name in it is schema-qualified, so it needs no SET clause of its own.
CREATE OR REPLACE FUNCTION idempo.same_projection(p_recorded text, p_claimed text) RETURNS boolean
    LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
BEGIN
    IF p_recorded = p_claimed THEN
        RETURN true;
    END IF;
    RETURN ARRAY(SELECT DISTINCT f COLLATE "C" FROM pg_catalog.jsonb_array_elements_text(p_recorded::jsonb) AS f
                 ORDER BY 1)
           IS NOT DISTINCT FROM
           ARRAY(SELECT DISTINCT f COLLATE "C" FROM pg_catalog.jsonb_array_elements_text(p_claimed::jsonb) AS f
                 ORDER BY 1);
END
$$;

SELECT idempo.grant_execute('idempo.same_projection(text,text)');
