-- SPDX-License-Identifier: Apache-2.0

-- Enqueues `p_message` with optional `p_headers` (a JSON object), readable after `p_delay_ms`.
-- A send with a delay that waited for the queue's table is sent, and delayed,
-- from then.
CREATE OR REPLACE FUNCTION idempo.queue_send(p_queue text, p_message text, p_headers text DEFAULT NULL,
                                             p_delay_ms bigint DEFAULT 0, p_clock_pinned_ms bigint DEFAULT NULL,
                                             p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint;
    waited bigint;
    message jsonb;
    headers jsonb;
    id bigint;
BEGIN
    PERFORM FROM idempo.queue_registry AS r WHERE r.queue_name = p_queue;
    IF NOT FOUND THEN
        PERFORM idempo.queue_info(p_queue);
    END IF;
    IF p_message IS NULL OR octet_length(p_message) > 1048576 OR octet_length(p_headers) > 1048576 THEN
        PERFORM idempo.check_message(p_message, p_headers);
    END IF;
    -- One parse of each text; one that is not JSON gets idempo.check_message's refusal.
    BEGIN
        message := p_message::jsonb;
        headers := nullif(p_headers, '')::jsonb;
    EXCEPTION WHEN invalid_text_representation THEN
        PERFORM idempo.check_message(p_message, p_headers);
    END;
    IF jsonb_typeof(headers) <> 'object' THEN
        PERFORM idempo.check_message(p_message, p_headers);
    END IF;
    IF p_delay_ms IS NULL OR p_delay_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_delay_ms must be 0..315360000000 ms (ten years), not ' || coalesce(p_delay_ms::text, 'NULL'));
    END IF;
    IF p_clock_pinned_ms IS NOT NULL OR coalesce(p_clock_offset_ms, 0) <> 0 THEN
        PERFORM idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    END IF;
    now_ms := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms);
    EXECUTE format('INSERT INTO pgmq.%I (enqueued_at, vt, message, headers) VALUES ($1, $2, $3, $4) RETURNING msg_id',
                   'q_' || p_queue)
        INTO id USING idempo.ms_at(now_ms), idempo.ms_at(now_ms + p_delay_ms), message, headers;
    IF p_delay_ms > 0 THEN
        waited := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms) - now_ms;
        IF idempo.past_tolerance(waited, p_delay_ms) THEN
            EXECUTE format('UPDATE pgmq.%I SET vt = vt + $1, enqueued_at = enqueued_at + $1 WHERE msg_id = $2',
                           'q_' || p_queue)
                USING waited * interval '1 millisecond', id;
        END IF;
    END IF;
    RETURN id;
END
$$;

SELECT idempo.grant_execute('idempo.queue_send(text,text,text,bigint,bigint,bigint)', 'idempo_worker');
