-- SPDX-License-Identifier: Apache-2.0
-- Schema 14: find an operation by a payload field or its customer (payloadmatch.h), the same
-- side table as the embedded ledger's schema 8. The scalar leaves of every payload, as
-- (JSON Pointer, text), under a primary key that is the search: `pointer = $1 AND value = $2`
-- walks it in operation id order, so the first page of a common value stops at its limit and a
-- rare one reads only its rows. A GIN index on payload::jsonb with @> would answer "is it there"
-- but not in id order (a common value sorts every match), ignores array positions, and compares
-- numbers by value where the embedded ledger compares text.
--
-- Kept by triggers on idempo.operations, so idempo.claim and whoever rewrites it need not know
-- about it. A leaf is kept when its pointer has at most 8 segments, its array indexes are below
-- 32 and its text is at most 256 bytes; the customer is one more row under the pseudo pointer
-- '#customer' (the first of customer, customer_id, client, client_id that is a string or
-- number). true, false and null are kept as those words, numbers as their decimal text.

CREATE TABLE idempo.payload_fields (
    pointer text COLLATE "C" NOT NULL,
    value text COLLATE "C" NOT NULL,
    operation_id bigint NOT NULL,
    PRIMARY KEY (pointer, value, operation_id)
);

-- Backfill: the operations already in the ledger, their leaves as this schema defined them (the
-- functions, idempo.payload_leaves among them, are created after the migrations and may change
-- later; a migration computes with its own copy).
CREATE FUNCTION pg_temp.payload_leaves_14(p_payload text) RETURNS TABLE (pointer text, value text)
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
INSERT INTO idempo.payload_fields (pointer, value, operation_id)
SELECT l.pointer, l.value, o.id FROM idempo.operations AS o CROSS JOIN LATERAL pg_temp.payload_leaves_14(o.payload) AS l
ON CONFLICT DO NOTHING;
DROP FUNCTION pg_temp.payload_leaves_14(text);

REVOKE ALL ON idempo.payload_fields FROM PUBLIC;

DO $$
DECLARE
    r text;
BEGIN
    FOR r IN SELECT rolname FROM pg_catalog.pg_roles
             WHERE rolname IN ('idempo_worker', 'idempo_viewer', 'idempo_approver', 'idempo_operator', 'idempo_admin') LOOP
        EXECUTE format('GRANT SELECT ON idempo.payload_fields TO %I', r);
    END LOOP;
END
$$;
