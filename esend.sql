SELECT idempo.queue_send('bq', :m);
