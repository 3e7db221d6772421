-- The schema of a ledger as rows (kind, name, definition), for comparing two ledgers: every
-- object of the ledger's schemas with its definition and its grants. Data rows are not compared.
WITH spaces AS (
    SELECT oid, nspname FROM pg_namespace
    WHERE nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND nspname NOT LIKE 'pg_temp%'
      AND nspname NOT LIKE 'pg_toast_temp%'
),
acl(objoid, rights) AS (
    SELECT c.oid, coalesce(string_agg(a.grantee::regrole::text || ':' || a.privilege_type, ','
                               ORDER BY a.grantee::regrole::text, a.privilege_type), '')
    FROM pg_class AS c JOIN spaces AS s ON s.oid = c.relnamespace
    LEFT JOIN LATERAL aclexplode(c.relacl) AS a ON a.grantee <> 0
    GROUP BY c.oid
    UNION ALL
    SELECT p.oid, coalesce(string_agg(CASE WHEN a.grantee = 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END
                                      || ':' || a.privilege_type, ','
                                      ORDER BY a.grantee::regrole::text, a.privilege_type), '')
    FROM pg_proc AS p JOIN spaces AS s ON s.oid = p.pronamespace
    LEFT JOIN LATERAL aclexplode(p.proacl) AS a ON true
    GROUP BY p.oid
)
SELECT 'function', p.oid::regprocedure::text,
       pg_get_functiondef(p.oid) || E'\ngrants: ' || (SELECT rights FROM acl WHERE objoid = p.oid)
FROM pg_proc AS p JOIN spaces AS s ON s.oid = p.pronamespace
UNION ALL
SELECT 'relation', c.oid::regclass::text,
       c.relkind::text || ' owner ' || c.relowner::regrole::text || ' grants: ' || (SELECT rights FROM acl WHERE objoid = c.oid)
FROM pg_class AS c JOIN spaces AS s ON s.oid = c.relnamespace WHERE c.relkind IN ('r', 'v', 'S', 'p', 'c', 'm')
UNION ALL
SELECT 'column', a.attrelid::regclass::text || '.' || a.attname,
       format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END
       || coalesce(' DEFAULT ' || pg_get_expr(d.adbin, d.adrelid), '') || coalesce(' COLLATE ' || co.collname, '')
FROM pg_attribute AS a
JOIN pg_class AS c ON c.oid = a.attrelid JOIN spaces AS s ON s.oid = c.relnamespace
LEFT JOIN pg_attrdef AS d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
LEFT JOIN pg_collation AS co ON co.oid = a.attcollation AND a.attcollation <> 100
WHERE a.attnum > 0 AND NOT a.attisdropped AND c.relkind IN ('r', 'v', 'p', 'c', 'm')
UNION ALL
SELECT 'index', i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid JOIN spaces AS s ON s.oid = c.relnamespace
UNION ALL
SELECT 'constraint', co.conrelid::regclass::text || '.' || co.conname, pg_get_constraintdef(co.oid)
FROM pg_constraint AS co JOIN spaces AS s ON s.oid = co.connamespace
UNION ALL
SELECT 'trigger', t.tgrelid::regclass::text || '.' || t.tgname, pg_get_triggerdef(t.oid)
FROM pg_trigger AS t JOIN pg_class AS c ON c.oid = t.tgrelid JOIN spaces AS s ON s.oid = c.relnamespace
WHERE NOT t.tgisinternal
UNION ALL
SELECT 'view', c.oid::regclass::text, pg_get_viewdef(c.oid)
FROM pg_class AS c JOIN spaces AS s ON s.oid = c.relnamespace WHERE c.relkind IN ('v', 'm')
UNION ALL
SELECT 'type', t.oid::regtype::text, t.typtype::text
FROM pg_type AS t JOIN spaces AS s ON s.oid = t.typnamespace WHERE t.typtype IN ('e', 'd')
UNION ALL
SELECT 'schema', s.nspname, pg_get_userbyid(n.nspowner) || ' ' || coalesce(n.nspacl::text, '')
FROM spaces AS s JOIN pg_namespace AS n ON n.oid = s.oid
ORDER BY 1, 2, 3;
