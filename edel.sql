\set id random(1, 1000000000)
SELECT idempo.queue_delete('bq', :id);
