-- SPDX-License-Identifier: Apache-2.0
-- Schema version 8: the queues' writes as functions (docs/sql-api.md): create, send, read (which
-- dead-letters in its own transaction), ack, delete, nack, archive, set_vt, the replay of a dead
-- letter, and the outbox (transition_and_send). The tables stay pgmq's (pgmq.q_<name>,
-- pgmq.a_<name>); their names come only from a queue name checked against ^[a-z][a-z0-9_]*$
-- and the registry, and are quoted with %I. Times are milliseconds in the API, timestamptz in
-- the tables.

-- A message as the functions answer it (messagequeue.h QueueMessage).
CREATE TYPE idempo.queue_message AS (
    msg_id bigint, read_ct integer, enqueued_at_ms bigint, last_read_at_ms bigint, vt_ms bigint,
    message jsonb, headers jsonb);

-- Acknowledged reads, so that an ack repeated after a lost answer is told `done` and a stale one
-- is told apart. Kept a day (idempo.purge_expired removes older ones).
CREATE TABLE idempo.queue_acks (
    queue_name text COLLATE "C" NOT NULL,
    msg_id bigint NOT NULL,
    read_ct integer NOT NULL,
    acked_at_ms bigint NOT NULL,
    PRIMARY KEY (queue_name, msg_id)
);

DO $$
DECLARE
    r text;
BEGIN
    FOR r IN SELECT rolname FROM pg_catalog.pg_roles
             WHERE rolname IN ('idempo_worker', 'idempo_viewer', 'idempo_approver', 'idempo_operator', 'idempo_admin') LOOP
        EXECUTE format('GRANT SELECT ON idempo.queue_acks TO %I', r);
    END LOOP;
END
$$;
