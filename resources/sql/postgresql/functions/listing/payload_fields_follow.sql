-- SPDX-License-Identifier: Apache-2.0

-- A record removed, or given a new id (an expired key claimed again), loses its payload leaves
-- and leaves the listing; refresh_listing() lists the new id. A listing row a refresh holds is
-- left for it (the refresh removes what no longer exists, and listings read through the
-- operations): a writer never waits for a reader. A payload changed in place gets its new
-- leaves here, under the listing row it has.
CREATE OR REPLACE FUNCTION idempo.payload_fields_follow() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    DELETE FROM idempo.payload_fields AS f
    USING idempo.payload_leaves(OLD.payload) AS l
    WHERE f.pointer = l.pointer AND f.value = l.value AND f.operation_id = OLD.id;
    IF TG_OP = 'UPDATE' AND OLD.id = NEW.id THEN
        INSERT INTO idempo.payload_fields (pointer, value, operation_id)
        SELECT l.pointer, l.value, NEW.id FROM idempo.payload_leaves(NEW.payload) AS l
        ON CONFLICT DO NOTHING;
        RETURN NULL;
    END IF;
    DELETE FROM idempo.operation_listing AS l
    WHERE l.id = (SELECT x.id FROM idempo.operation_listing AS x WHERE x.id = OLD.id FOR UPDATE SKIP LOCKED);
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER payload_fields_delete AFTER DELETE ON idempo.operations
    FOR EACH ROW EXECUTE FUNCTION idempo.payload_fields_follow();

-- A claim on a retention-expired key gives the record a new id and payload in place.
CREATE OR REPLACE TRIGGER payload_fields_replace AFTER UPDATE OF id, payload ON idempo.operations
    FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id OR OLD.payload IS DISTINCT FROM NEW.payload)
    EXECUTE FUNCTION idempo.payload_fields_follow();

SELECT idempo.grant_execute('idempo.payload_fields_follow()');
