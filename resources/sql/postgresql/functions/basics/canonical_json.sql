-- SPDX-License-Identifier: Apache-2.0

-- RFC 8785 text of a jsonb value. Object members are ordered by code point ("C"), which is
-- UTF-16 order except between supplementary characters and U+E000..U+FFFF; numbers are written
-- as ECMAScript does, from the shortest text that round-trips the double (float8out).
CREATE OR REPLACE FUNCTION idempo.canonical_json(v jsonb) RETURNS text
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    parts text[];
    digits text;
    point integer;
    n integer;
    k integer;
BEGIN
    CASE jsonb_typeof(v)
    WHEN 'object' THEN
        RETURN '{' || coalesce((SELECT string_agg(to_json(e.key)::text || ':' || idempo.canonical_json(e.value), ','
                                                  ORDER BY e.key COLLATE "C")
                                FROM jsonb_each(v) AS e), '') || '}';
    WHEN 'array' THEN
        RETURN '[' || coalesce((SELECT string_agg(idempo.canonical_json(e.value), ',' ORDER BY e.ordinality)
                                FROM jsonb_array_elements(v) WITH ORDINALITY AS e (value, ordinality)), '') || ']';
    WHEN 'string' THEN
        RETURN to_json(v #>> '{}')::text;
    WHEN 'number' THEN
        parts := regexp_match((v #>> '{}')::float8::text, '^(-?)([0-9]+)(?:\.([0-9]+))?(?:e([-+][0-9]+))?$');
        digits := parts[2] || coalesce(parts[3], '');
        point := length(parts[2]) + coalesce(parts[4]::integer, 0);
        point := point - (length(digits) - length(ltrim(digits, '0')));
        digits := rtrim(ltrim(digits, '0'), '0');
        IF digits = '' THEN
            RETURN '0';
        END IF;
        k := length(digits);
        n := point;
        RETURN parts[1] || CASE
            WHEN k <= n AND n <= 21 THEN digits || repeat('0', n - k)
            WHEN 0 < n AND n <= 21 THEN substr(digits, 1, n) || '.' || substr(digits, n + 1)
            WHEN -6 < n AND n <= 0 THEN '0.' || repeat('0', -n) || digits
            ELSE substr(digits, 1, 1) || CASE WHEN k > 1 THEN '.' || substr(digits, 2) ELSE '' END
                 || 'e' || CASE WHEN n - 1 >= 0 THEN '+' ELSE '-' END || abs(n - 1)::text
        END;
    ELSE
        RETURN v::text;
    END CASE;
END
$$;

SELECT idempo.grant_execute('idempo.canonical_json(jsonb)', 'idempo_admin', 'idempo_approver', 'idempo_operator', 'idempo_viewer', 'idempo_worker');
