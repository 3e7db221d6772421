-- SPDX-License-Identifier: Apache-2.0

-- The transactional outbox: idempo.transition() and a send (no delay) of `p_message` to
-- `p_queue` in one transaction, the message stamped with the transition's time.
-- The send may wait for the queue's table after the transition was written.
CREATE OR REPLACE FUNCTION idempo.transition_and_send(
    p_namespace text, p_key text, p_from text, p_fencing_token bigint, p_to text, p_queue text, p_message text,
    p_headers text DEFAULT NULL, p_actor text DEFAULT '', p_detail text DEFAULT '', p_result text DEFAULT NULL,
    p_receipt text DEFAULT NULL, p_error_class text DEFAULT NULL, p_error_detail text DEFAULT NULL,
    p_retry_delay_ms bigint DEFAULT NULL, p_lease_ms bigint DEFAULT NULL, p_extra_attempts integer DEFAULT NULL,
    p_retention_ms bigint DEFAULT 86400000, p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0,
    OUT operation idempo.operation_answer, OUT msg_id bigint)
    LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    o idempo.operations%ROWTYPE;
BEGIN
    PERFORM idempo.queue_info(p_queue);
    PERFORM idempo.check_message(p_message, p_headers);
    operation := idempo.transition(p_namespace, p_key, p_from, p_fencing_token, p_to, p_actor, p_detail, p_result,
                                   p_receipt, p_error_class, p_error_detail, p_retry_delay_ms, p_lease_ms,
                                   p_extra_attempts, p_retention_ms, p_clock_pinned_ms, p_clock_offset_ms);
    msg_id := idempo.enqueue(p_queue, p_message::jsonb, nullif(p_headers, '')::jsonb, (operation).updated_at_ms,
                             (operation).updated_at_ms);
    SELECT * INTO o FROM idempo.operations AS x WHERE x.id = (operation).id;
    IF idempo.waited_past(o) THEN
        PERFORM idempo.settle_writes(o.id);
        SELECT * INTO o FROM idempo.operations AS x WHERE x.id = o.id;
        operation := idempo.answer(o);
    END IF;
END
$$;

SELECT idempo.grant_execute('idempo.transition_and_send(text,text,text,bigint,text,text,text,text,text,text,text,text,text,text,bigint,bigint,integer,bigint,bigint,bigint)', 'idempo_worker');
