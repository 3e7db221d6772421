-- SPDX-License-Identifier: Apache-2.0

-- A failed processing attempt: keeps the error as the message's last (carried into the
-- dead-letter queue) and makes it visible again after `p_retry_delay_ms`. With `p_read_ct`, a
-- nack of a read that is no longer the message's latest is refused (ID006).
-- A delay that waited for the queue's table or the message's row counts from then.
CREATE OR REPLACE FUNCTION idempo.queue_nack(p_queue text, p_msg_id bigint, p_error_class text, p_error_detail text DEFAULT '',
                                  p_retry_delay_ms bigint DEFAULT 0, p_read_ct integer DEFAULT NULL,
                                  p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.queue_message LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint;
    waited bigint;
    m idempo.queue_message;
BEGIN
    PERFORM idempo.queue_info(p_queue);
    IF p_error_class IS NULL OR NOT idempo.is_error_class(p_error_class) THEN
        PERFORM idempo.raise('ID004', 'p_error_class ' || coalesce(to_json(p_error_class)::text, 'NULL') || ' is not an error class');
    END IF;
    IF p_retry_delay_ms IS NULL OR p_retry_delay_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_retry_delay_ms must be 0..315360000000 ms (ten years), not '
                                      || coalesce(p_retry_delay_ms::text, 'NULL'));
    END IF;
    IF octet_length(p_error_detail) > 65536 THEN
        PERFORM idempo.raise('ID004', 'p_error_detail must hold at most 65536 bytes');
    END IF;
    now_ms := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    m := idempo.update_vt(p_queue, p_msg_id, now_ms + p_retry_delay_ms, p_read_ct);
    INSERT INTO idempo.queue_errors (queue_name, msg_id, error_class, error_detail, recorded_at_ms)
    VALUES (p_queue, p_msg_id, p_error_class, coalesce(p_error_detail, ''), now_ms)
    ON CONFLICT (queue_name, msg_id) DO UPDATE
        SET error_class = excluded.error_class, error_detail = excluded.error_detail, recorded_at_ms = excluded.recorded_at_ms;
    waited := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms) - now_ms;
    IF idempo.past_tolerance(waited, p_retry_delay_ms) THEN
        m := idempo.update_vt(p_queue, p_msg_id, m.vt_ms + waited, m.read_ct);
    END IF;
    RETURN m;
END
$$;

SELECT idempo.grant_execute('idempo.queue_nack(text,bigint,text,text,bigint,integer,bigint,bigint)', 'idempo_worker');
