SELECT idempo.queue_send('bq', :m);
SELECT msg_id, read_ct FROM idempo.queue_read('bq', 30000, 1) \gset
SELECT idempo.queue_ack('bq', :msg_id, :read_ct);
