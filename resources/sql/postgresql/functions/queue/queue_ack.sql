-- SPDX-License-Identifier: Apache-2.0

CREATE OR REPLACE FUNCTION idempo.queue_ack(p_queue text, p_msg_id bigint, p_read_ct integer,
                                            p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS text LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM FROM idempo.queue_registry AS r WHERE r.queue_name = p_queue;
    IF NOT FOUND THEN
        PERFORM idempo.queue_info(p_queue);
    END IF;
    IF p_clock_pinned_ms IS NOT NULL OR coalesce(p_clock_offset_ms, 0) <> 0 THEN
        PERFORM idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    END IF;
    RETURN idempo.acknowledge(p_queue, p_msg_id, p_read_ct, idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms));
END
$$;

SELECT idempo.grant_execute('idempo.queue_ack(text,bigint,integer,bigint,bigint)', 'idempo_worker');
