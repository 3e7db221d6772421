-- SPDX-License-Identifier: Apache-2.0

-- Judges again, once the locks of all its writes are held, the operation `p_id` this transaction
-- wrote: when the clock has left its stamp behind past the tolerance, the stamp and every expiry
-- the record holds (each write recomputes them all from its stamp) move on by the wait, and so do
-- its newest event, which this transaction wrote under the row's lock and which carries the
-- stamp, and the creation time of a record it created. The one place the rule moves a record.
CREATE OR REPLACE FUNCTION idempo.settle_writes(p_id bigint) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    now_ms bigint := idempo.now_ms();
    settled bigint;
    creation boolean;
BEGIN
    IF idempo.test_clock_moved() THEN
        RETURN;
    END IF;
    UPDATE idempo.operations AS x SET
        updated_at_ms = now_ms,
        lease_expires_at_ms = x.lease_expires_at_ms + (now_ms - x.updated_at_ms),
        next_attempt_at_ms = x.next_attempt_at_ms + (now_ms - x.updated_at_ms),
        retention_expires_at_ms = x.retention_expires_at_ms + (now_ms - x.updated_at_ms)
    WHERE x.id = p_id AND x.changed_xid = pg_catalog.pg_current_xact_id()
      AND idempo.past_tolerance(now_ms - x.updated_at_ms,
                                least(x.lease_expires_at_ms, x.next_attempt_at_ms, x.retention_expires_at_ms) - x.updated_at_ms)
    RETURNING x.updated_at_ms INTO settled;
    IF FOUND THEN
        UPDATE idempo.operation_events AS e SET at_ms = settled
        WHERE e.id = (SELECT max(v.id) FROM idempo.operation_events AS v WHERE v.operation_id = p_id)
        RETURNING e.from_state IS NULL INTO creation;
        IF creation THEN
            UPDATE idempo.operations AS x SET created_at_ms = settled WHERE x.id = p_id;
        END IF;
    END IF;
END
$$;

SELECT idempo.grant_execute('idempo.settle_writes(bigint)');
