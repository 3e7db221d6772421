SELECT idempo.queue_send('q1', :m);
SELECT msg_id, read_ct FROM idempo.queue_read('q1', 30000, 1) \gset
SELECT idempo.queue_ack('q1', :msg_id, :read_ct);
