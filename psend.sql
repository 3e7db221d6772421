SELECT pgmq.send('bq', CAST(:m AS jsonb));
