SELECT idempo.queue_send('bq', '{"n":1}');
SELECT msg_id AS prev_id, read_ct AS prev_ct FROM idempo.queue_read('bq', 30000, 1, CASE WHEN :prev_id > 0 THEN '[[' || :prev_id || ',' || :prev_ct || ']]' END) \gset
