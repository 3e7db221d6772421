SELECT pgmq.send('bq', '{"n":1}');
SELECT msg_id FROM pgmq.read('bq', 30, 1) \gset
SELECT pgmq.delete('bq'::text, CAST(:msg_id AS bigint));
