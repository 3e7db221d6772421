SELECT msg_id FROM pgmq.read('bq', 30, 1);
