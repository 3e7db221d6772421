\set k random(1, 1000000000)
INSERT INTO floor.ops(key, payload_hash, status, lease_owner, lease_expires_at) VALUES ('r' || CAST(:k AS bigint) || '-s' || CAST(:client_id AS int), 'abc', 'dispatching', 'w', clock_timestamp() + interval '30 s') ON CONFLICT (key) DO NOTHING RETURNING fencing_token;
UPDATE floor.ops SET status = 'succeeded', result = jsonb_build_object('ok', true), updated_at = clock_timestamp() WHERE key = 'r' || CAST(:k AS bigint) || '-s' || CAST(:client_id AS int) AND fencing_token = 1 AND status = 'dispatching';
