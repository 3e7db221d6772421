SELECT msg_id FROM idempo.queue_read('bq', 30000, 1);
