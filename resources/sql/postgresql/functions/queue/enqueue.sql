-- SPDX-License-Identifier: Apache-2.0

-- Inserts a message into queue `p_queue` (known to exist) at `p_now_ms`; returns its msg_id.
CREATE OR REPLACE FUNCTION idempo.enqueue(p_queue text, p_message jsonb, p_headers jsonb, p_vt_ms bigint, p_now_ms bigint)
    RETURNS bigint LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    id bigint;
BEGIN
    EXECUTE format('INSERT INTO pgmq.%I (enqueued_at, vt, message, headers) VALUES ($1, $2, $3, $4) RETURNING msg_id',
                   'q_' || p_queue)
        INTO id USING idempo.ms_at(p_now_ms), idempo.ms_at(p_vt_ms), p_message, p_headers;
    RETURN id;
END
$$;

SELECT idempo.grant_execute('idempo.enqueue(text,jsonb,jsonb,bigint,bigint)');
