SELECT idempo.queue_send('q3', :m);
SELECT msg_id, read_ct FROM idempo.queue_read('q3', 30000, 1) \gset
SELECT idempo.queue_ack('q3', :msg_id, :read_ct);
