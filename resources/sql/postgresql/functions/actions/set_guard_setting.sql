-- SPDX-License-Identifier: Apache-2.0

-- Guard settings: reference_rates joins them.
CREATE OR REPLACE FUNCTION idempo.set_guard_setting(p_name text, p_value text, p_reason text, p_as_name text DEFAULT NULL,
                                                    p_as_role text DEFAULT NULL, p_clock_pinned_ms bigint DEFAULT NULL,
                                                    p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    me record := idempo.acting(p_as_name, p_as_role);
    now_ms bigint := idempo.clock_for(p_clock_pinned_ms, p_clock_offset_ms);
    previous text;
    audit idempo.audit_log%ROWTYPE;
BEGIN
    PERFORM idempo.require_role(me.role, ARRAY['owner', 'admin'], 'change guard settings', 'idempo_admin', p_reason);
    IF p_name IS NULL OR p_name NOT IN ('four_eyes_above', 'reference_rates', 'run_failed_dispatches', 'run_no_progress_s',
                                        'run_spend_cap', 'run_token_cap') THEN
        PERFORM idempo.raise('ID004', 'unknown guard setting ''' || coalesce(p_name, 'NULL') || '''');
    END IF;
    IF p_value IS NULL THEN
        PERFORM idempo.raise('ID004', 'the value of ' || p_name || ' must not be NULL');
    END IF;
    IF p_name = 'four_eyes_above' AND p_value <> '' AND idempo.major_to_minor(p_value, '') IS NULL THEN
        PERFORM idempo.raise('ID004', idempo.threshold_problem(p_value));
    END IF;
    IF p_name = 'reference_rates' AND p_value <> '' THEN
        PERFORM idempo.check_reference_rates(p_value);
    END IF;
    IF p_name = 'run_spend_cap' AND p_value <> ''
       AND (p_value !~ '^[0-9]+(\.[0-9]+)? [A-Z]{3}$'
            OR idempo.major_to_minor(split_part(p_value, ' ', 1), split_part(p_value, ' ', 2)) IS NULL) THEN
        PERFORM idempo.raise('ID004', 'the run spend cap must be an amount such as 100.00 EUR, not ''' || p_value || '''');
    END IF;
    IF p_name IN ('run_failed_dispatches', 'run_no_progress_s', 'run_token_cap') AND p_value <> ''
       AND (p_value !~ '^[0-9]{1,15}$' OR p_value::bigint < 1) THEN
        PERFORM idempo.raise('ID004', p_name || ' must be a positive whole number (or empty for no limit), not '''
                                      || p_value || '''');
    END IF;
    SELECT s.value INTO previous FROM idempo.guard_settings AS s WHERE s.name = p_name FOR UPDATE;
    INSERT INTO idempo.guard_settings (name, value) VALUES (p_name, p_value)
    ON CONFLICT (name) DO UPDATE SET value = excluded.value;
    audit := idempo.append_audit(now_ms, me.who, me.role, 'setting', 'setting:' || p_name, p_reason,
                                 coalesce(to_json(previous)::text, 'null'), to_json(p_value)::text, '', '');
    RETURN audit.seq;
END
$$;

SELECT idempo.grant_execute('idempo.set_guard_setting(text,text,text,text,text,bigint,bigint)', 'idempo_admin');
