-- SPDX-License-Identifier: Apache-2.0

-- Creates queue `p_queue` and its dead-letter queue `<name>_dlq` in pgmq's layout (adopting
-- tables pgmq made), registers both and grants the roles SELECT on them; an existing queue with
-- the same max reads is returned as it is. The owner's work (it is DDL): granted to no role.
CREATE OR REPLACE FUNCTION idempo.queue_create(p_queue text, p_max_reads integer DEFAULT 5, p_clock_pinned_ms bigint DEFAULT NULL,
                                    p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.queue_registry LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp
    SET client_min_messages = warning AS $$
DECLARE
    info idempo.queue_registry%ROWTYPE;
    dlq text := p_queue || '_dlq';
    now_ms bigint := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    name text;
    r text;
BEGIN
    IF p_queue IS NULL OR p_queue !~ '^[a-z][a-z0-9_]{0,42}$' OR p_queue ~ '_dlq$' THEN
        PERFORM idempo.raise('ID004', 'p_queue must be 1..43 characters of lowercase letters, digits and ''_'', start with a '
                                      'letter and not end in _dlq, not ' || coalesce(to_json(left(p_queue, 80))::text, 'NULL'));
    END IF;
    IF p_max_reads IS NULL OR p_max_reads < 1 THEN
        PERFORM idempo.raise('ID004', 'max reads must be at least 1, not ' || coalesce(p_max_reads::text, 'NULL'));
    END IF;
    -- pgmq.create() takes the same per-name locks, so Idempo and pgmq never create one queue twice.
    PERFORM pg_advisory_xact_lock(29670604302066033), pg_advisory_xact_lock(hashtext('pgmq.queue_' || p_queue)),
            pg_advisory_xact_lock(hashtext('pgmq.queue_' || dlq));
    SELECT * INTO info FROM idempo.queue_registry AS q WHERE q.queue_name = p_queue;
    IF FOUND THEN
        IF info.max_reads IS DISTINCT FROM p_max_reads THEN
            PERFORM idempo.raise('ID004', 'queue ''' || p_queue || ''' already exists with max reads '
                                          || coalesce(info.max_reads, 0) || ', not ' || p_max_reads);
        END IF;
        RETURN info;
    END IF;
    CREATE SCHEMA IF NOT EXISTS pgmq;
    FOREACH name IN ARRAY ARRAY[p_queue, dlq] LOOP
        EXECUTE format('CREATE TABLE IF NOT EXISTS pgmq.%I (msg_id bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY, '
                       'read_ct integer NOT NULL DEFAULT 0, enqueued_at timestamptz NOT NULL DEFAULT now(), '
                       'last_read_at timestamptz, vt timestamptz NOT NULL, message jsonb, headers jsonb)', 'q_' || name);
        EXECUTE format('ALTER TABLE pgmq.%I ADD COLUMN IF NOT EXISTS last_read_at timestamptz, '
                       'ADD COLUMN IF NOT EXISTS headers jsonb', 'q_' || name);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON pgmq.%I (vt ASC)', 'q_' || name || '_vt_idx', 'q_' || name);
        EXECUTE format('CREATE TABLE IF NOT EXISTS pgmq.%I (msg_id bigint PRIMARY KEY, read_ct integer NOT NULL DEFAULT 0, '
                       'enqueued_at timestamptz NOT NULL DEFAULT now(), last_read_at timestamptz, '
                       'archived_at timestamptz NOT NULL DEFAULT now(), vt timestamptz NOT NULL, message jsonb, '
                       'headers jsonb)', 'a_' || name);
        EXECUTE format('ALTER TABLE pgmq.%I ADD COLUMN IF NOT EXISTS last_read_at timestamptz, '
                       'ADD COLUMN IF NOT EXISTS headers jsonb', 'a_' || name);
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON pgmq.%I (archived_at)', 'archived_at_idx_' || name, 'a_' || name);
        EXECUTE format('REVOKE ALL ON pgmq.%I, pgmq.%I FROM PUBLIC', 'q_' || name, 'a_' || name);
        FOR r IN SELECT rolname FROM pg_roles
                 WHERE rolname IN ('idempo_worker', 'idempo_viewer', 'idempo_approver', 'idempo_operator', 'idempo_admin') LOOP
            EXECUTE format('GRANT USAGE ON SCHEMA pgmq TO %I', r);
            EXECUTE format('REVOKE ALL ON pgmq.%I, pgmq.%I FROM %I', 'q_' || name, 'a_' || name, r);
            EXECUTE format('GRANT SELECT ON pgmq.%I, pgmq.%I TO %I', 'q_' || name, 'a_' || name, r);
            EXECUTE format('GRANT SELECT ON SEQUENCE %s TO %I', pg_get_serial_sequence(format('pgmq.%I', 'q_' || name), 'msg_id'), r);
        END LOOP;
    END LOOP;
    INSERT INTO idempo.queue_registry (queue_name, max_reads, dead_letter_queue, created_at_ms)
    VALUES (dlq, NULL, NULL, now_ms), (p_queue, p_max_reads, dlq, now_ms);
    SELECT * INTO info FROM idempo.queue_registry AS q WHERE q.queue_name = p_queue;
    RETURN info;
END
$$;

SELECT idempo.grant_execute('idempo.queue_create(text,integer,bigint,bigint)');
