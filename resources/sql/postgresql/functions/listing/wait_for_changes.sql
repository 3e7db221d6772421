-- SPDX-License-Identifier: Apache-2.0

-- idempo.changes_since() that waits, up to `p_timeout_ms` (at most a minute), for a change to
-- list: a console's long poll. It looks every 50 ms, each time with a fresh snapshot.
CREATE OR REPLACE FUNCTION idempo.wait_for_changes(p_snapshot text, p_namespace text DEFAULT '', p_timeout_ms integer DEFAULT 400,
                                        OUT snapshot text, OUT changes jsonb)
    LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    deadline timestamptz := clock_timestamp() + least(greatest(coalesce(p_timeout_ms, 0), 0), 60000) * interval '1 ms';
BEGIN
    IF p_snapshot IS NULL OR p_snapshot !~ '^[0-9]+:[0-9]+:[0-9,]*$' THEN
        PERFORM idempo.raise('ID004', 'p_snapshot must be a snapshot idempo.change_snapshot() or an earlier answer gave, not '
                                      || coalesce(to_json(left(p_snapshot, 80))::text, 'NULL'));
    END IF;
    LOOP
        SELECT c.snapshot, c.changes INTO snapshot, changes FROM idempo.changes_since(p_snapshot, p_namespace) AS c;
        EXIT WHEN jsonb_array_length(changes) > 0 OR clock_timestamp() >= deadline;
        PERFORM pg_sleep(0.05);
    END LOOP;
END
$$;

SELECT idempo.grant_execute('idempo.wait_for_changes(text,text,integer)', 'idempo_admin', 'idempo_approver', 'idempo_operator', 'idempo_viewer', 'idempo_worker');
