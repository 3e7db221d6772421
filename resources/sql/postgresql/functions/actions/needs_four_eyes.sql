-- SPDX-License-Identifier: Apache-2.0

-- Whether approving p_minor of p_currency takes a second approver (money.h needsFourEyes):
-- exact numeric comparisons, no division.
CREATE OR REPLACE FUNCTION idempo.needs_four_eyes(p_minor bigint, p_currency text) RETURNS boolean
    LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    threshold numeric := replace(nullif((SELECT s.value FROM idempo.guard_settings AS s WHERE s.name = 'four_eyes_above'), ''),
                                 ',', '')::numeric;
    rates text := nullif((SELECT s.value FROM idempo.guard_settings AS s WHERE s.name = 'reference_rates'), '');
    scale numeric := 10::numeric ^ idempo.currency_exponent(coalesce(p_currency, ''));
    rate numeric;
BEGIN
    IF p_minor IS NULL OR threshold IS NULL THEN
        RETURN false;
    END IF;
    IF rates IS NULL THEN
        RETURN p_minor > threshold * scale;
    END IF;
    IF p_currency = split_part(rates, ' ', 1) THEN
        rate := 1;
    ELSE
        SELECT split_part(t.part, '=', 2)::numeric INTO rate FROM unnest(string_to_array(rates, ' ')) AS t(part)
        WHERE split_part(t.part, '=', 1) = p_currency;
    END IF;
    RETURN rate IS NULL OR p_minor * rate > threshold * scale;
END
$$;

SELECT idempo.grant_execute('idempo.needs_four_eyes(bigint,text)');
