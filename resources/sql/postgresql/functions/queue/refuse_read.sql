-- SPDX-License-Identifier: Apache-2.0

-- Raises the refusal of `p_action` of read `p_read_ct` of message `p_msg_id`, which is at read
-- `p_current` now: ID006 when it was read again since, ID004 when it has not been read that often.
CREATE OR REPLACE FUNCTION idempo.refuse_read(p_queue text, p_msg_id bigint, p_read_ct integer, p_current integer, p_action text)
    RETURNS void LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_current > p_read_ct THEN
        PERFORM idempo.raise('ID006', 'message ' || p_msg_id || ' of queue ''' || p_queue || ''' was read again (read '
                                      || p_current || ') after read ' || p_read_ct
                                      || ': its visibility timeout lapsed and another consumer has it; the ' || p_action
                                      || ' is refused');
    END IF;
    PERFORM idempo.raise('ID004', 'message ' || p_msg_id || ' of queue ''' || p_queue || ''' has not been read '
                                  || p_read_ct || ' times (read_ct ' || p_current || ')');
END
$$;

SELECT idempo.grant_execute('idempo.refuse_read(text,bigint,integer,integer,text)');
