-- SPDX-License-Identifier: Apache-2.0

-- What an operation moves (money.h operationValue): its declared value, else its payload's
-- /amount (a number, or a decimal string in major units) in /currency.
CREATE OR REPLACE FUNCTION idempo.operation_value(o idempo.operations, OUT minor bigint, OUT currency text)
    LANGUAGE plpgsql IMMUTABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    payload jsonb;
    scaled numeric;
BEGIN
    IF o.value_minor IS NOT NULL THEN
        minor := o.value_minor;
        currency := o.value_currency;
        RETURN;
    END IF;
    IF NOT idempo.is_json(o.payload) THEN
        RETURN;
    END IF;
    payload := o.payload::jsonb;
    IF jsonb_typeof(payload) <> 'object' OR NOT payload ? 'amount' THEN
        RETURN;
    END IF;
    currency := CASE WHEN jsonb_typeof(payload -> 'currency') = 'string' THEN payload ->> 'currency' ELSE '' END;
    IF jsonb_typeof(payload -> 'amount') = 'string' THEN
        minor := idempo.major_to_minor(payload ->> 'amount', currency);
    ELSIF jsonb_typeof(payload -> 'amount') = 'number' THEN
        scaled := (payload ->> 'amount')::numeric * 10 ^ idempo.currency_exponent(currency);
        IF scaled >= 0 AND scaled <= 9e15 THEN
            minor := round(scaled)::bigint;
        END IF;
    END IF;
    IF minor IS NULL THEN
        -- An /amount that is there but cannot be read (a sign, too large, finer than the
        -- currency's minor unit, not a number) is worth an unknown amount: the most, in no
        -- currency, so that needs_four_eyes gates it whatever the threshold and the rates.
        minor := 9223372036854775807;
        currency := '';
    END IF;
END
$$;

SELECT idempo.grant_execute('idempo.operation_value(operations)');
