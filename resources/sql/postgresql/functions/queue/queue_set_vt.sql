-- SPDX-License-Identifier: Apache-2.0

-- Makes a message visible `p_vt_offset_ms` from now, whatever its vt was.
-- A move that waited for the queue's table or the message's row counts from then.
CREATE OR REPLACE FUNCTION idempo.queue_set_vt(p_queue text, p_msg_id bigint, p_vt_offset_ms bigint,
                                    p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.queue_message LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint;
    waited bigint;
    m idempo.queue_message;
BEGIN
    PERFORM idempo.queue_info(p_queue);
    IF p_vt_offset_ms IS NULL OR p_vt_offset_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_vt_offset_ms must be 0..315360000000 ms (ten years), not '
                                      || coalesce(p_vt_offset_ms::text, 'NULL'));
    END IF;
    now_ms := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    m := idempo.update_vt(p_queue, p_msg_id, now_ms + p_vt_offset_ms, NULL);
    waited := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms) - now_ms;
    IF idempo.past_tolerance(waited, p_vt_offset_ms) THEN
        m := idempo.update_vt(p_queue, p_msg_id, m.vt_ms + waited, NULL);
    END IF;
    RETURN m;
END
$$;

SELECT idempo.grant_execute('idempo.queue_set_vt(text,bigint,bigint,bigint,bigint)', 'idempo_worker');
