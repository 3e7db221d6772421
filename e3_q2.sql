SELECT idempo.queue_send('q2', :m);
SELECT msg_id, read_ct FROM idempo.queue_read('q2', 30000, 1) \gset
SELECT idempo.queue_ack('q2', :msg_id, :read_ct);
