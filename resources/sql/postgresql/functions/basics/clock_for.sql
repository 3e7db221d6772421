-- SPDX-License-Identifier: Apache-2.0

CREATE OR REPLACE FUNCTION idempo.clock_for(p_clock_pinned_ms bigint, p_clock_offset_ms bigint) RETURNS bigint
    LANGUAGE plpgsql VOLATILE SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    IF p_clock_pinned_ms IS NOT NULL OR coalesce(p_clock_offset_ms, 0) <> 0 THEN
        IF NOT idempo.is_owner() THEN
            RAISE EXCEPTION 'login % may not move the ledger''s clock (p_clock_pinned_ms, p_clock_offset_ms are for tests by the owner)',
                session_user USING ERRCODE = '42501';
        END IF;
        PERFORM pg_catalog.set_config('idempo.test_clock', 'on', true);
    END IF;
    RETURN idempo.now_ms(p_clock_pinned_ms, p_clock_offset_ms);
END
$$;

SELECT idempo.grant_execute('idempo.clock_for(bigint,bigint)');
