-- SPDX-License-Identifier: Apache-2.0
-- Payload search on a 1,000,000-operation shared ledger (docs/console.md "Figures"): run on a
-- ledger `idempo init` made, e.g.
--   tests/pg/with-postgres.sh bash -c 'build/app/idempo --ledger "$IDEMPO_TEST_POSTGRES_URL" init &&
--       psql -X -d "$IDEMPO_TEST_POSTGRES_URL" -f docs/bench/search.sql'
-- The payloads are bench_console's: every tenth operation for customer acme (100,000), the others
-- for 100,000 customers cust-N (9 or 10 each), an order id per operation. The statements are
-- the ones PostgresLedgerStore::list() sends for a first page of 50, as the Find tab asks.
\timing off
INSERT INTO idempo.operations (namespace, operation_key, run_id, step_id, tool_kind, state, payload,
    payload_fingerprint, attempt, max_attempts, fencing_token, created_at_ms, updated_at_ms, schema_version)
SELECT 'default', 'run-' || (i / 3) || ':' || (ARRAY['extract_document', 'compliance_check', 'provision_account'])[i % 3 + 1],
       'run-' || (i / 3), 'step', 'protected_write',
       CASE WHEN i % 500 = 7 THEN 'dispatching' WHEN i % 2000 = 11 THEN 'confirmation_required' ELSE 'succeeded' END,
       '{"amount":1,"customer":"' || CASE WHEN i % 10 = 0 THEN 'acme' ELSE 'cust-' || (i % 100000) END ||
           '","order":{"id":"o-' || i || '"}}',
       'f', 1, 3, i + 1, 0, 0, 1
FROM generate_series(0, 999999) AS i;
VACUUM ANALYZE idempo.operations;
VACUUM ANALYZE idempo.payload_fields;
SELECT count(*) AS payload_fields_rows, pg_size_pretty(pg_total_relation_size('idempo.payload_fields')) AS size
FROM idempo.payload_fields;
\timing on
\echo customer (rare, cust-4242)
SELECT count(*) FROM (SELECT o.* FROM idempo.payload_fields AS f JOIN idempo.operations AS o ON o.id = f.operation_id
WHERE f.pointer = '#customer' AND f.value = 'cust-4242' AND f.operation_id > 0 ORDER BY f.operation_id LIMIT 50) AS page;
\echo customer (common, acme)
SELECT count(*) FROM (SELECT o.* FROM idempo.payload_fields AS f JOIN idempo.operations AS o ON o.id = f.operation_id
WHERE f.pointer = '#customer' AND f.value = 'acme' AND f.operation_id > 0 ORDER BY f.operation_id LIMIT 50) AS page;
\echo payload field (one operation, /order/id = o-777777)
SELECT count(*) FROM (SELECT o.* FROM idempo.payload_fields AS f JOIN idempo.operations AS o ON o.id = f.operation_id
WHERE f.pointer = '/order/id' AND f.value = 'o-777777' AND f.operation_id > 0 ORDER BY f.operation_id LIMIT 50) AS page;
\echo payload field (every operation, /amount = 1)
SELECT count(*) FROM (SELECT o.* FROM idempo.payload_fields AS f JOIN idempo.operations AS o ON o.id = f.operation_id
WHERE f.pointer = '/amount' AND f.value = '1' AND f.operation_id > 0 ORDER BY f.operation_id LIMIT 50) AS page;
\echo common customer and a state none of its operations is in
SELECT count(*) FROM (SELECT o.* FROM idempo.payload_fields AS f JOIN idempo.operations AS o ON o.id = f.operation_id
WHERE f.pointer = '#customer' AND f.value = 'acme' AND f.operation_id > 0 AND state = 'dispatching'
ORDER BY f.operation_id LIMIT 50) AS page;
\timing off
EXPLAIN (ANALYZE, COSTS OFF) SELECT o.* FROM idempo.payload_fields AS f JOIN idempo.operations AS o ON o.id = f.operation_id
WHERE f.pointer = '#customer' AND f.value = 'acme' AND f.operation_id > 0 ORDER BY f.operation_id LIMIT 50;
