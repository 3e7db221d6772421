\set k random(1, 1000000000)
SELECT fencing_token AS token FROM idempo.claim('bench', 'r' || CAST(:k AS bigint) || '-s' || CAST(:client_id AS int), '{"amount":1250,"currency":"EUR","to":"acct-0"}', 'd9ea6e96dd36079d74849c38421cec9eb9e3d8eae120e6f6c894510c99c7ad77', 'bench', 'protected_write', 30000, 3, false, 'run-0', 'provision_account', 'core-banking') \gset
SELECT 1 FROM idempo.transition('bench', 'r' || CAST(:k AS bigint) || '-s' || CAST(:client_id AS int), 'dispatching', :token, 'succeeded', 'bench', 'completed', '{"account":"A-1"}', NULL, NULL, NULL, NULL, NULL, NULL, 86400000);
