-- SPDX-License-Identifier: Apache-2.0
-- Schema version 10: the claim path's helpers made cheap (docs/benchmarks.md). A SQL function
-- the planner cannot inline is planned again on every call from PL/pgSQL: sha256_hex was
-- declared IMMUTABLE over the STABLE convert_to, which forbids inlining (58 µs a call), and
-- same_projection carried a SET clause (117 µs a call, on every claim of a recorded key).

CREATE OR REPLACE FUNCTION idempo.sha256_hex(p_text text) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE
RETURN pg_catalog.encode(pg_catalog.sha256(pg_catalog.convert_to(p_text, 'UTF8')), 'hex');

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
