SELECT pgmq.send('bq', CAST(:m AS jsonb));
SELECT msg_id FROM pgmq.read('bq', 30, 1) \gset
SELECT pgmq.delete('bq'::text, CAST(:msg_id AS bigint));
