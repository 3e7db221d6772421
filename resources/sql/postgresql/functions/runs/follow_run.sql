-- SPDX-License-Identifier: Apache-2.0

-- Every history event that ends a dispatch in failure counts against its run and halts it at the
-- limit; an operation received again (an approval, a reconciliation) is progress. The trigger
-- fires on neither a claim nor a completion.
-- The run's lock may be waited for after the operation was written, so the
-- operation settles once it is held (the run's own stamp is judged by runs_stamp_after_locks).
CREATE OR REPLACE FUNCTION idempo.follow_run() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    failed boolean := NEW.to_state <> 'received';
    r idempo.runs%ROWTYPE;
    halts boolean;
BEGIN
    SELECT x.* INTO r FROM idempo.operations AS o
    JOIN idempo.runs AS x ON x.namespace = o.namespace AND x.run_id = o.run_id
    WHERE o.id = NEW.operation_id AND o.run_id <> '' FOR UPDATE OF x;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    IF idempo.now_ms() - NEW.at_ms > 1 THEN
        PERFORM idempo.settle_writes(NEW.operation_id);
    END IF;
    halts := failed AND r.state = 'active' AND r.failed_dispatch_limit IS NOT NULL
             AND r.failed_dispatches + 1 >= r.failed_dispatch_limit;
    UPDATE idempo.runs AS x SET
        failed_dispatches = x.failed_dispatches + failed::integer,
        last_progress_at_ms = CASE WHEN failed THEN x.last_progress_at_ms
                                   ELSE greatest(x.last_progress_at_ms, NEW.at_ms) END,
        state = CASE WHEN halts THEN 'halted' ELSE x.state END,
        halt_budget = CASE WHEN halts THEN 'failed_dispatches' ELSE x.halt_budget END,
        halted_at_ms = CASE WHEN halts THEN NEW.at_ms ELSE x.halted_at_ms END,
        halt_detail = CASE WHEN halts THEN (x.failed_dispatches + 1) || ' failed dispatches of ' || x.failed_dispatch_limit
                           ELSE x.halt_detail END,
        updated_at_ms = NEW.at_ms, run_version = x.run_version + 1
    WHERE x.namespace = r.namespace AND x.run_id = r.run_id;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER runs_follow_events AFTER INSERT ON idempo.operation_events FOR EACH ROW
    WHEN (NEW.from_state IS NOT NULL
          AND ((NEW.from_state = 'dispatching'
                AND NEW.to_state IN ('failed_retryable', 'failed_terminal', 'unknown_outcome', 'confirmation_required'))
               OR NEW.to_state = 'received'))
    EXECUTE FUNCTION idempo.follow_run();

SELECT idempo.grant_execute('idempo.follow_run()');
