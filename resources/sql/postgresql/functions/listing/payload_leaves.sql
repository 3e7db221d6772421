-- SPDX-License-Identifier: Apache-2.0

CREATE OR REPLACE FUNCTION idempo.payload_leaves(p_payload text) RETURNS TABLE (pointer text, value text)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    WITH RECURSIVE doc(v) AS MATERIALIZED (SELECT p_payload::jsonb),
    r(pointer, v, depth) AS (
        SELECT '', doc.v, 0 FROM doc
        UNION ALL
        SELECT r.pointer || '/' || replace(replace(e.k, '~', '~0'), '/', '~1'), e.v, r.depth + 1
        FROM r CROSS JOIN LATERAL (
            SELECT o.key, o.value FROM jsonb_each(CASE WHEN jsonb_typeof(r.v) = 'object' THEN r.v END) AS o
            UNION ALL
            SELECT (a.n - 1)::text, a.value
            FROM jsonb_array_elements(CASE WHEN jsonb_typeof(r.v) = 'array' THEN r.v END) WITH ORDINALITY AS a (value, n)
            WHERE a.n <= 32
        ) AS e (k, v)
        WHERE r.depth < 8
    )
    SELECT l.pointer, l.value FROM (
        SELECT r.pointer, CASE jsonb_typeof(r.v) WHEN 'null' THEN 'null' ELSE r.v #>> '{}' END AS value
        FROM r WHERE jsonb_typeof(r.v) NOT IN ('object', 'array')
        UNION ALL
        (SELECT '#customer', doc.v ->> c.name FROM doc,
                (VALUES ('customer', 0), ('customer_id', 1), ('client', 2), ('client_id', 3)) AS c (name, rank)
         WHERE jsonb_typeof(doc.v) = 'object' AND jsonb_typeof(doc.v -> c.name) IN ('string', 'number')
         ORDER BY c.rank LIMIT 1)
    ) AS l
    WHERE octet_length(l.value) <= 256
$$;

SELECT idempo.grant_execute('idempo.payload_leaves(text)');
