-- SPDX-License-Identifier: Apache-2.0

-- Who may call a function, stated whole: PUBLIC and every idempo role lose EXECUTE on it, then
-- each role named gets it back when the role exists (a DBA who creates a missing role later runs
-- `idempo init` again). Every function file ends with this call, so the file is the one place
-- that says who may call what it defines. Applied first (functions/access/ sorts first).
CREATE OR REPLACE FUNCTION idempo.grant_execute(p_function regprocedure, VARIADIC p_roles text[] DEFAULT '{}')
    RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    ours constant text[] := ARRAY['idempo_worker', 'idempo_viewer', 'idempo_approver', 'idempo_operator', 'idempo_admin'];
    r text;
BEGIN
    IF NOT p_roles <@ ours THEN
        RAISE EXCEPTION 'grant_execute(%): % is not one of the ledger''s roles (%)', p_function,
            (SELECT string_agg(x, ', ') FROM unnest(p_roles) AS x WHERE x <> ALL (ours)), array_to_string(ours, ', ');
    END IF;
    EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', p_function);
    FOR r IN SELECT rolname FROM pg_roles WHERE rolname = ANY (ours) ORDER BY rolname LOOP
        IF r = ANY (p_roles) THEN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', p_function, r);
        ELSE
            EXECUTE format('REVOKE ALL ON FUNCTION %s FROM %I', p_function, r);
        END IF;
    END LOOP;
END
$$;

SELECT idempo.grant_execute('idempo.grant_execute(regprocedure,text[])');
