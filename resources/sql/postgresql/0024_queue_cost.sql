-- SPDX-License-Identifier: Apache-2.0
-- Schema version 24: the queue's cycle cheaper (docs/benchmarks.md), rules and refusals unchanged.
--
-- idempo.ms_at was declared IMMUTABLE over timestamptz + interval, which is STABLE, so the
-- planner never inlined it: each of its four calls in a send, read and ack cycle ran through the
-- SQL function machinery (about 17 µs a call). Declared as what it is, it is inlined.
ALTER FUNCTION idempo.ms_at(bigint) STABLE;

-- The queue's durations are bounded, as the stores bound them (MaxQueueDurationMs, ten years):
-- a larger one overflowed the clock's arithmetic with a bare 22003 or 22008 that named no
-- argument. A read's carried acks (at most 10,000 pairs) must each be two whole numbers of 1 or
-- more in range, all checked before any is acknowledged, or the read names the pair: a fraction
-- or a huge number was a bare cast error, and a bad last pair came after every other's work.
-- Otherwise as in schemas 16 and 8.
CREATE OR REPLACE FUNCTION idempo.queue_send(p_queue text, p_message text, p_headers text DEFAULT NULL,
                                             p_delay_ms bigint DEFAULT 0, p_clock_pinned_ms bigint DEFAULT NULL,
                                             p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint;
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
    RETURN id;
END
$$;

CREATE OR REPLACE FUNCTION idempo.queue_read(p_queue text, p_vt_ms bigint, p_quantity integer DEFAULT 1, p_ack text DEFAULT NULL,
                                  p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS SETOF idempo.queue_message LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    info idempo.queue_registry%ROWTYPE;
    now_ms bigint;
    after bigint := 0;
    missing integer := p_quantity;
    asked integer;
    candidates integer;
    exhausted bigint[];
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
                RETURN NEXT ROW(m.msg_id, m.read_ct, floor(extract(epoch FROM m.enqueued_at) * 1000)::bigint,
                                floor(extract(epoch FROM m.last_read_at) * 1000)::bigint,
                                floor(extract(epoch FROM m.vt) * 1000)::bigint, m.message, m.headers)::idempo.queue_message;
            ELSE
                exhausted := exhausted || m.msg_id;
            END IF;
        END LOOP;
        EXIT WHEN cardinality(exhausted) = 0;
        PERFORM idempo.dead_letter(p_queue, info.dead_letter_queue, exhausted, now_ms);
        -- A round that found fewer candidates than it asked for has seen every visible message.
        EXIT WHEN missing = 0 OR candidates < asked;
    END LOOP;
END
$$;

CREATE OR REPLACE FUNCTION idempo.queue_nack(p_queue text, p_msg_id bigint, p_error_class text, p_error_detail text DEFAULT '',
                                  p_retry_delay_ms bigint DEFAULT 0, p_read_ct integer DEFAULT NULL,
                                  p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.queue_message LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint;
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
    RETURN m;
END
$$;

CREATE OR REPLACE FUNCTION idempo.queue_set_vt(p_queue text, p_msg_id bigint, p_vt_offset_ms bigint,
                                    p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS idempo.queue_message LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM idempo.queue_info(p_queue);
    IF p_vt_offset_ms IS NULL OR p_vt_offset_ms NOT BETWEEN 0 AND 315360000000 THEN
        PERFORM idempo.raise('ID004', 'p_vt_offset_ms must be 0..315360000000 ms (ten years), not '
                                      || coalesce(p_vt_offset_ms::text, 'NULL'));
    END IF;
    RETURN idempo.update_vt(p_queue, p_msg_id, idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms) + p_vt_offset_ms, NULL);
END
$$;
