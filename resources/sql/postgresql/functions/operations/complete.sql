-- SPDX-License-Identifier: Apache-2.0

-- A worker's success under its lease: dispatching -> succeeded with the result and receipt.
CREATE OR REPLACE FUNCTION idempo.complete(p_namespace text, p_key text, p_fencing_token bigint, p_result text DEFAULT '',
                                p_receipt text DEFAULT '', p_actor text DEFAULT '',
                                p_retention_ms bigint DEFAULT 86400000)
    RETURNS idempo.operation_answer LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RETURN idempo.transition(p_namespace, p_key, 'dispatching', p_fencing_token, 'succeeded', p_actor, 'completed',
                             p_result, p_receipt, NULL, NULL, NULL, NULL, NULL, p_retention_ms);
END
$$;

SELECT idempo.grant_execute('idempo.complete(text,text,bigint,text,text,text,bigint)', 'idempo_worker');
