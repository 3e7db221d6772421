-- SPDX-License-Identifier: Apache-2.0

-- Raises `message` with SQLSTATE `code`.
CREATE OR REPLACE FUNCTION idempo.raise(code text, message text) RETURNS void
    LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = code, MESSAGE = message;
END
$$;

SELECT idempo.grant_execute('idempo.raise(text,text)');
