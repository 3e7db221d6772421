-- A claim of a new key and its completion, as two autocommit calls. Run with -D cycle=0: each
-- client counts its cycles, and its keys are 'e<seed>-<client>-<cycle>', its own sequence
-- within the run and apart from every other run (pgbench's random_seed differs per run; give
-- each run its own --random-seed if you set one). A claim that does not answer claimed, or a
-- completion that does not leave the operation succeeded, ends the client with an error that
-- says so, and pgbench with exit status 2: a round never measures fewer clients than it says.
\set cycle :cycle + 1
SELECT CASE WHEN c.outcome = 'claimed' THEN c.fencing_token ELSE CAST('engine.sql: the claim of ' || c.operation_key || ' answered ' || c.outcome || ', not claimed' AS bigint) END AS token FROM idempo.claim('bench', 'e' || CAST(:random_seed AS text) || '-' || CAST(:client_id AS text) || '-' || CAST(:cycle AS text), '{"amount":1250,"currency":"EUR","to":"acct-0"}', 'd9ea6e96dd36079d74849c38421cec9eb9e3d8eae120e6f6c894510c99c7ad77', 'bench', 'protected_write', 30000, 3, false, 'run-0', 'provision_account', 'core-banking') AS c \gset
SELECT CASE WHEN t.state = 'succeeded' THEN 1 ELSE CAST('engine.sql: the completion of ' || t.operation_key || ' left it ' || t.state AS int) END FROM idempo.transition('bench', 'e' || CAST(:random_seed AS text) || '-' || CAST(:client_id AS text) || '-' || CAST(:cycle AS text), 'dispatching', :token, 'succeeded', 'bench', 'completed', '{"account":"A-1"}', NULL, NULL, NULL, NULL, NULL, NULL, 86400000) AS t;
