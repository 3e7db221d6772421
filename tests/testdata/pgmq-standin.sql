-- SPDX-License-Identifier: Apache-2.0
-- A stand-in for pgmq's own SQL in the tests of `idempo bench queue --pgmq FILE`: the functions
-- the bench drives (create, send, read, delete), with pgmq's names, arguments and table layout,
-- loaded where a user loads pgmq.sql. Not pgmq: just enough to run the bench's machinery.
CREATE SCHEMA pgmq;

CREATE FUNCTION pgmq.create(queue_name text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('CREATE TABLE pgmq.%I (msg_id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY, '
                   'read_ct integer NOT NULL DEFAULT 0, enqueued_at timestamptz NOT NULL DEFAULT now(), '
                   'vt timestamptz NOT NULL, message jsonb, headers jsonb)', 'q_' || queue_name);
END
$$;

CREATE FUNCTION pgmq.send(queue_name text, msg jsonb) RETURNS SETOF bigint LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY EXECUTE format('INSERT INTO pgmq.%I (vt, message) VALUES (clock_timestamp(), $1) RETURNING msg_id',
                                'q_' || queue_name) USING msg;
END
$$;

CREATE TYPE pgmq.message_record AS (msg_id bigint, read_ct integer, enqueued_at timestamptz, vt timestamptz,
                                    message jsonb);

CREATE FUNCTION pgmq.read(queue_name text, vt integer, qty integer) RETURNS SETOF pgmq.message_record
    LANGUAGE plpgsql AS $$
BEGIN
    RETURN QUERY EXECUTE format('WITH cte AS (SELECT q.msg_id FROM pgmq.%1$I AS q WHERE q.vt <= clock_timestamp() '
                                'ORDER BY q.msg_id LIMIT $1 FOR UPDATE SKIP LOCKED) '
                                'UPDATE pgmq.%1$I AS m SET vt = clock_timestamp() + make_interval(secs => $2), '
                                'read_ct = m.read_ct + 1 FROM cte WHERE m.msg_id = cte.msg_id '
                                'RETURNING m.msg_id, m.read_ct, m.enqueued_at, m.vt, m.message', 'q_' || queue_name)
        USING qty, vt;
END
$$;

CREATE FUNCTION pgmq.delete(queue_name text, msg_id bigint) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    gone bigint;
BEGIN
    EXECUTE format('DELETE FROM pgmq.%I WHERE msg_id = $1 RETURNING msg_id', 'q_' || queue_name) INTO gone USING msg_id;
    RETURN gone IS NOT NULL;
END
$$;
