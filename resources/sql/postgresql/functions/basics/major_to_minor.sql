-- SPDX-License-Identifier: Apache-2.0

-- A non-negative decimal amount in major units ("1250", "1,250.00": a ',' only between groups
-- of three digits of the whole part) in minor units of `p_currency`; NULL for anything else
-- (money.h parseMajorAmount).
CREATE OR REPLACE FUNCTION idempo.major_to_minor(p_text text, p_currency text) RETURNS bigint
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    whole text;
    fraction text;
    exponent integer := idempo.currency_exponent(p_currency);
BEGIN
    IF p_text IS NULL OR p_text !~ '^([0-9]*|[0-9]{1,3}(,[0-9]{3})+)(\.[0-9]*)?$' THEN
        RETURN NULL;
    END IF;
    whole := replace(split_part(p_text, '.', 1), ',', '');
    fraction := CASE WHEN strpos(p_text, '.') > 0 THEN split_part(p_text, '.', 2) ELSE '' END;
    IF whole || fraction = '' OR length(whole || fraction) > 15 OR length(fraction) > exponent THEN
        RETURN NULL;
    END IF;
    RETURN (whole || fraction)::bigint * (10::bigint ^ (exponent - length(fraction)))::bigint;
END
$$;

SELECT idempo.grant_execute('idempo.major_to_minor(text,text)');
