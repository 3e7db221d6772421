-- SPDX-License-Identifier: Apache-2.0

-- Moves messages `p_ids` of `p_queue` (locked by the caller's read) to `p_dlq`.
CREATE OR REPLACE FUNCTION idempo.dead_letter(p_queue text, p_dlq text, p_ids bigint[], p_now_ms bigint) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    m record;
BEGIN
    FOR m IN EXECUTE format('WITH moved AS (DELETE FROM pgmq.%I AS m WHERE m.msg_id = ANY ($1) '
                            '  RETURNING m.msg_id, m.read_ct, m.message, m.headers) '
                            'SELECT * FROM moved ORDER BY msg_id', 'q_' || p_queue) USING p_ids
    LOOP
        PERFORM idempo.enqueue(p_dlq, m.message,
            CASE WHEN m.headers IS NULL THEN '{}'::jsonb WHEN jsonb_typeof(m.headers) = 'object' THEN m.headers
                 ELSE jsonb_build_object('original_headers', m.headers) END
            || jsonb_build_object('dlq', (SELECT jsonb_build_object(
                   'source_queue', p_queue, 'source_msg_id', m.msg_id, 'read_ct', m.read_ct,
                   'last_error_class', e.error_class, 'last_error_detail', e.error_detail, 'dead_lettered_at', p_now_ms)
                FROM (VALUES (1)) AS one (v)
                LEFT JOIN idempo.queue_errors AS e ON e.queue_name = p_queue AND e.msg_id = m.msg_id)),
            p_now_ms, p_now_ms);
        DELETE FROM idempo.queue_errors AS e WHERE e.queue_name = p_queue AND e.msg_id = m.msg_id;
    END LOOP;
    RAISE WARNING 'queue %: % message(s) moved to % after their last read (msg_id % … %)', p_queue, cardinality(p_ids),
        p_dlq, p_ids[1], p_ids[cardinality(p_ids)];
END
$$;

SELECT idempo.grant_execute('idempo.dead_letter(text,text,bigint[],bigint)');
