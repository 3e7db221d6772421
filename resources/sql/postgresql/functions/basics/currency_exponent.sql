-- SPDX-License-Identifier: Apache-2.0

-- ISO 4217 exponent (amount.cpp currencyExponent).
CREATE OR REPLACE FUNCTION idempo.currency_exponent(p_currency text) RETURNS integer LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN CASE WHEN p_currency IN ('BIF', 'CLP', 'DJF', 'GNF', 'ISK', 'JPY', 'KMF', 'KRW', 'PYG', 'RWF', 'UGX', 'UYI',
                                'VND', 'VUV', 'XAF', 'XOF') THEN 0
            WHEN p_currency IN ('BHD', 'IQD', 'JOD', 'KWD', 'LYD', 'OMR', 'TND') THEN 3
            ELSE 2 END;

SELECT idempo.grant_execute('idempo.currency_exponent(text)');
