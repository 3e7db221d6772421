-- SPDX-License-Identifier: Apache-2.0

-- Delivers up to `p_quantity` visible messages, oldest first, each hidden for `p_vt_ms`: read_ct
-- grows by one and last_read_at becomes now. Two readers never get one message inside its
-- timeout (FOR UPDATE SKIP LOCKED). A message whose read_ct would pass the queue's max reads is
-- moved to the dead-letter queue in this same transaction, with its provenance and last error in
-- the copy's headers (queuerules.h), and the read goes on for the slots it freed. `p_ack`, a
-- JSON array of [msg_id, read_ct] pairs, acknowledges earlier reads first, in the same
-- transaction (as idempo.queue_ack): a consumer's "done with these, give me the next".
-- The messages a read delivers stay invisible for p_vt_ms from the clock once
-- the read holds its locks (the acks', the queue's, the dead-letter queue's): a read that waited
-- moves their read time and visibility timeout on by the wait, so they are returned after the
-- read's last write.
CREATE OR REPLACE FUNCTION idempo.queue_read(p_queue text, p_vt_ms bigint, p_quantity integer DEFAULT 1, p_ack text DEFAULT NULL,
                                  p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS SETOF idempo.queue_message LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    info idempo.queue_registry%ROWTYPE;
    now_ms bigint;
    waited bigint;
    after bigint := 0;
    missing integer := p_quantity;
    asked integer;
    candidates integer;
    exhausted bigint[];
    got idempo.queue_message[] := '{}';
    m record;
    acks jsonb;
    pair jsonb;
BEGIN
    SELECT * INTO info FROM idempo.queue_registry AS x WHERE x.queue_name = p_queue;
    IF NOT FOUND THEN
        info := idempo.queue_info(p_queue);
    END IF;
    IF p_vt_ms IS NULL OR p_vt_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_vt_ms (the visibility timeout) must be 0..315360000000 ms (ten years), not '
                                      || coalesce(p_vt_ms::text, 'NULL'));
    END IF;
    IF p_quantity IS NULL OR p_quantity NOT BETWEEN 1 AND 10000 THEN
        PERFORM idempo.raise('ID004', 'p_quantity must be 1..10000, not ' || coalesce(p_quantity::text, 'NULL'));
    END IF;
    IF p_clock_pinned_ms IS NOT NULL OR coalesce(p_clock_offset_ms, 0) <> 0 THEN
        PERFORM idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    END IF;
    now_ms := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms);
    IF p_ack IS NOT NULL THEN
        IF NOT idempo.is_json(p_ack) OR jsonb_typeof(p_ack::jsonb) <> 'array' THEN
            PERFORM idempo.raise('ID004', 'p_ack must be a JSON array of [msg_id, read_ct] pairs');
        END IF;
        acks := p_ack::jsonb;
        IF jsonb_array_length(acks) > 10000 THEN
            PERFORM idempo.raise('ID004', 'p_ack holds at most 10000 pairs, not ' || jsonb_array_length(acks));
        END IF;
        -- Every pair is checked before any is acknowledged, and CASE keeps each cast behind its check.
        FOR pair IN SELECT e.v FROM jsonb_array_elements(acks) AS e (v) LOOP
            IF (CASE WHEN jsonb_typeof(pair) <> 'array' THEN true
                    WHEN jsonb_array_length(pair) <> 2 THEN true
                    WHEN jsonb_typeof(pair -> 0) <> 'number' OR jsonb_typeof(pair -> 1) <> 'number' THEN true
                    ELSE (pair -> 0)::numeric NOT BETWEEN 1 AND 9223372036854775807
                         OR (pair -> 0)::numeric <> trunc((pair -> 0)::numeric)
                         OR (pair -> 1)::numeric NOT BETWEEN 1 AND 2147483647
                         OR (pair -> 1)::numeric <> trunc((pair -> 1)::numeric) END) THEN
                PERFORM idempo.raise('ID004', 'p_ack must be a JSON array of [msg_id, read_ct] pairs of whole numbers 1 or '
                                              || 'more, not ' || left(pair::text, 80));
            END IF;
        END LOOP;
        FOR pair IN SELECT e.v FROM jsonb_array_elements(acks) AS e (v) LOOP
            PERFORM idempo.acknowledge(p_queue, (pair -> 0)::numeric::bigint, (pair -> 1)::numeric::integer, now_ms);
        END LOOP;
    END IF;
    LOOP
        exhausted := '{}';
        candidates := 0;
        asked := missing;
        FOR m IN EXECUTE format(
            'WITH candidates AS MATERIALIZED ('
            '  SELECT q.msg_id, q.read_ct FROM pgmq.%1$I AS q WHERE q.vt <= $1 AND q.msg_id > $2'
            '  ORDER BY q.msg_id LIMIT $3 FOR UPDATE SKIP LOCKED), '
            'delivered AS ('
            '  UPDATE pgmq.%1$I AS m SET vt = $4, read_ct = m.read_ct + 1, last_read_at = $1'
            '  WHERE m.msg_id = ANY (ARRAY(SELECT c.msg_id FROM candidates AS c WHERE $5::integer IS NULL OR c.read_ct < $5))'
            '  RETURNING m.msg_id, m.read_ct, m.enqueued_at, m.last_read_at, m.vt, m.message, m.headers) '
            'SELECT true AS delivered, d.* FROM delivered AS d '
            'UNION ALL SELECT false, c.msg_id, c.read_ct, NULL, NULL, NULL, NULL, NULL FROM candidates AS c '
            '  WHERE c.read_ct >= $5 '
            'ORDER BY 2', 'q_' || p_queue)
            USING idempo.ms_at(now_ms), after, asked, idempo.ms_at(now_ms + p_vt_ms), info.max_reads
        LOOP
            candidates := candidates + 1;
            after := greatest(after, m.msg_id);
            IF m.delivered THEN
                missing := missing - 1;
                got := got || ROW(m.msg_id, m.read_ct, floor(extract(epoch FROM m.enqueued_at) * 1000)::bigint,
                                  floor(extract(epoch FROM m.last_read_at) * 1000)::bigint,
                                  floor(extract(epoch FROM m.vt) * 1000)::bigint, m.message,
                                  m.headers)::idempo.queue_message;
            ELSE
                exhausted := exhausted || m.msg_id;
            END IF;
        END LOOP;
        EXIT WHEN cardinality(exhausted) = 0;
        PERFORM idempo.dead_letter(p_queue, info.dead_letter_queue, exhausted, now_ms);
        -- A round that found fewer candidates than it asked for has seen every visible message.
        EXIT WHEN missing = 0 OR candidates < asked;
    END LOOP;
    waited := idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms) - now_ms;
    IF idempo.past_tolerance(waited, p_vt_ms) AND cardinality(got) > 0 THEN
        EXECUTE format('UPDATE pgmq.%I SET vt = vt + $1, last_read_at = last_read_at + $1 WHERE msg_id = ANY ($2)',
                       'q_' || p_queue)
            USING waited * interval '1 millisecond', ARRAY(SELECT g.msg_id FROM unnest(got) AS g);
        RETURN QUERY SELECT g.msg_id, g.read_ct, g.enqueued_at_ms, g.last_read_at_ms + waited, g.vt_ms + waited,
                            g.message, g.headers
                     FROM unnest(got) AS g;
    ELSE
        RETURN QUERY SELECT * FROM unnest(got);
    END IF;
END
$$;

SELECT idempo.grant_execute('idempo.queue_read(text,bigint,integer,text,bigint,bigint)', 'idempo_worker');
