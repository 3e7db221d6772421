-- SPDX-License-Identifier: Apache-2.0

-- Refuses (ID004, naming what is wrong) text that is not a reference_rates setting.
CREATE OR REPLACE FUNCTION idempo.check_reference_rates(p_value text) RETURNS void
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    part text;
    seen text[];
BEGIN
    seen := ARRAY[split_part(p_value, ' ', 1)];
    IF seen[1] !~ '^[A-Z]{3}$' THEN
        PERFORM idempo.raise('ID004', 'reference_rates must start with the reference currency (three capital letters, '
                                      || 'e.g. EUR), not ' || to_json(seen[1])::text);
    END IF;
    FOR part IN SELECT u.t FROM unnest(string_to_array(p_value, ' ')) WITH ORDINALITY AS u(t, n) WHERE u.n > 1 LOOP
        IF part !~ '^[A-Z]{3}=[0-9]{1,9}(\.[0-9]{1,9})?$' THEN
            PERFORM idempo.raise('ID004', 'each rate of reference_rates is CUR=RATE (e.g. USD=0.92, up to 9 decimals, single '
                                          || 'spaces between), not ' || to_json(part)::text);
        END IF;
        IF split_part(part, '=', 2)::numeric = 0 THEN
            PERFORM idempo.raise('ID004', 'the rate of ' || split_part(part, '=', 1) || ' must be above zero');
        END IF;
        IF split_part(part, '=', 1) = ANY (seen) THEN
            PERFORM idempo.raise('ID004', 'reference_rates names ' || split_part(part, '=', 1) || ' twice');
        END IF;
        seen := seen || split_part(part, '=', 1);
    END LOOP;
END
$$;

SELECT idempo.grant_execute('idempo.check_reference_rates(text)');
