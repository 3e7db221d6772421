-- SPDX-License-Identifier: Apache-2.0

-- A worker's lease extended to `p_lease_ms` from now.
CREATE OR REPLACE FUNCTION idempo.heartbeat(p_namespace text, p_key text, p_fencing_token bigint, p_lease_ms bigint DEFAULT 30000,
                                 p_actor text DEFAULT '')
    RETURNS idempo.operation_answer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN idempo.transition(p_namespace, p_key, 'dispatching', p_fencing_token, 'dispatching', p_actor, 'heartbeat',
                             NULL, NULL, NULL, NULL, NULL, p_lease_ms);
END
$$;

SELECT idempo.grant_execute('idempo.heartbeat(text,text,bigint,bigint,text)', 'idempo_worker');
