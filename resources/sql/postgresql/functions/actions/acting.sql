-- SPDX-License-Identifier: Apache-2.0

-- Who acts: the login, or, for the owner only, the identity it names (tools the owner runs
-- record on behalf of people). `p_as_role` is recorded for the owner's named identity; for
-- everyone else the login's own group is.
-- It takes the audit chain's locks first (the log's table, its head's row):
-- every guarded action calls it before it reads the clock, so the audit record it appends after
-- its writes never waits for the chain.
CREATE OR REPLACE FUNCTION idempo.acting(p_as_name text, p_as_role text, OUT who text, OUT role text)
    LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    LOCK TABLE idempo.audit_log IN ROW EXCLUSIVE MODE;
    PERFORM FROM idempo.audit_head AS h WHERE h.singleton FOR UPDATE;
    SELECT w.login, w.role INTO who, role FROM idempo.whoami() AS w;
    IF p_as_name IS NULL OR p_as_name = '' OR p_as_name = who THEN
        RETURN;
    END IF;
    IF role <> 'owner' THEN
        RAISE EXCEPTION 'login % may not act as %: identity is the database login', who, p_as_name
            USING ERRCODE = '42501';
    END IF;
    PERFORM idempo.check_identifier(p_as_name, 'p_as_name', true, 255);
    who := p_as_name;
    role := coalesce(nullif(p_as_role, ''), 'owner');
END
$$;

SELECT idempo.grant_execute('idempo.acting(text,text)');
