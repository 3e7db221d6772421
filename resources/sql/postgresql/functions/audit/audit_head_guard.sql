-- SPDX-License-Identifier: Apache-2.0

-- The head moves only with an appended record (the trigger above runs at depth 1).
CREATE OR REPLACE FUNCTION idempo.audit_head_guard() RETURNS trigger
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND pg_catalog.pg_trigger_depth() > 1 THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'audit_head moves only when a record is appended: % refused', TG_OP USING ERRCODE = '42501';
END
$$;

CREATE OR REPLACE TRIGGER audit_head_guarded BEFORE INSERT OR UPDATE OR DELETE ON idempo.audit_head
    FOR EACH ROW EXECUTE FUNCTION idempo.audit_head_guard();

CREATE OR REPLACE TRIGGER audit_head_no_truncate BEFORE TRUNCATE ON idempo.audit_head
    FOR EACH STATEMENT EXECUTE FUNCTION idempo.audit_head_guard();

SELECT idempo.grant_execute('idempo.audit_head_guard()');
