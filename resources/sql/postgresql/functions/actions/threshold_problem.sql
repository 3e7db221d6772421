-- SPDX-License-Identifier: Apache-2.0

-- Why `p_value` is not a four-eyes threshold (an amount in major units that
-- idempo.major_to_minor reads), in the words of thresholdProblem (money.h).
CREATE OR REPLACE FUNCTION idempo.threshold_problem(p_value text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    given text := 'not ''' || p_value || '''';
    whole text := split_part(p_value, '.', 1);
    decimals text := CASE WHEN strpos(p_value, '.') > 0 THEN substr(p_value, strpos(p_value, '.') + 1) END;
    exponent integer := idempo.currency_exponent('');
BEGIN
    IF p_value ~ '^[-+]' THEN
        RETURN 'the four-eyes threshold takes no sign: it is an amount of 0 or more such as 1000.00, ' || given;
    END IF;
    IF p_value ~ '^[0-9,.]*$' AND p_value ~ ',' AND p_value !~ '^([0-9]*|[0-9]{1,3}(,[0-9]{3})+)(\.[^,]*)?$' THEN
        RETURN 'the four-eyes threshold writes '','' only between groups of three digits before the ''.'', such as '
               '1,000.00, ' || given;
    END IF;
    IF decimals IS NOT NULL AND whole ~ '^[0-9,]*$' AND decimals ~ '^[0-9,]*$' AND length(decimals) > exponent THEN
        RETURN 'the four-eyes threshold takes at most ' || exponent || ' decimals, ' || given;
    END IF;
    IF whole ~ '^[0-9,]*$' AND (decimals IS NULL OR decimals ~ '^[0-9,]*$') AND p_value ~ '[0-9]' THEN
        RETURN 'the four-eyes threshold takes at most 15 digits, ' || given;
    END IF;
    RETURN 'the four-eyes threshold must be an amount in major units such as 1000.00 (digits, an optional ''.'' and up to '
           || exponent || ' decimals), ' || given;
END
$$;

SELECT idempo.grant_execute('idempo.threshold_problem(text)');
