-- SPDX-License-Identifier: Apache-2.0

-- "1,250.00 EUR" (amount.h formatAmount).
CREATE OR REPLACE FUNCTION idempo.format_minor(p_minor bigint, p_currency text) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE SET search_path = pg_catalog, pg_temp
RETURN pg_catalog.to_char(p_minor / (10::bigint ^ idempo.currency_exponent(p_currency))::bigint, 'FM999,999,999,999,999,990')
    || CASE WHEN idempo.currency_exponent(p_currency) > 0
            THEN '.' || pg_catalog.lpad((p_minor % (10::bigint ^ idempo.currency_exponent(p_currency))::bigint)::text,
                                        idempo.currency_exponent(p_currency), '0')
            ELSE '' END
    || ' ' || p_currency;

SELECT idempo.grant_execute('idempo.format_minor(bigint,text)');
