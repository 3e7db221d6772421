-- SPDX-License-Identifier: Apache-2.0

-- A run written with a stale stamp: the stamp and the times this write set to it (progress,
-- the halt, the creation) move on by the wait, so a no-progress budget counts from then.
CREATE OR REPLACE FUNCTION idempo.stamp_run() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    stamp bigint := NEW.updated_at_ms;
    waited bigint := idempo.now_ms() - NEW.updated_at_ms;
BEGIN
    IF NOT idempo.past_tolerance(waited, NEW.no_progress_ms) OR idempo.test_clock_moved() THEN
        RETURN NEW;
    END IF;
    NEW.updated_at_ms := stamp + waited;
    IF NEW.last_progress_at_ms = stamp AND (TG_OP = 'INSERT' OR OLD.last_progress_at_ms <> stamp) THEN
        NEW.last_progress_at_ms := stamp + waited;
    END IF;
    IF NEW.halted_at_ms = stamp AND (TG_OP = 'INSERT' OR OLD.halted_at_ms IS DISTINCT FROM stamp) THEN
        NEW.halted_at_ms := stamp + waited;
    END IF;
    IF TG_OP = 'INSERT' AND NEW.created_at_ms = stamp THEN
        NEW.created_at_ms := stamp + waited;
    END IF;
    RETURN NEW;
END
$$;

-- Its WHEN clause is built-in arithmetic only: it is prepared again for every statement, and a
-- clause of SQL functions (inlined, planned each time) would cost more than the write it guards.
CREATE OR REPLACE TRIGGER runs_stamp_after_locks BEFORE INSERT OR UPDATE ON idempo.runs FOR EACH ROW
    WHEN (pg_catalog.date_part('epoch', pg_catalog.clock_timestamp()) * 1000 - NEW.updated_at_ms > 1)
    EXECUTE FUNCTION idempo.stamp_run();

SELECT idempo.grant_execute('idempo.stamp_run()');
