-- SPDX-License-Identifier: Apache-2.0

-- The owner emptying the operations empties what is derived from them.
CREATE OR REPLACE FUNCTION idempo.listing_truncate() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    TRUNCATE idempo.operation_listing, idempo.payload_fields;
    RETURN NULL;
END
$$;

CREATE OR REPLACE TRIGGER operations_truncated AFTER TRUNCATE ON idempo.operations
    FOR EACH STATEMENT EXECUTE FUNCTION idempo.listing_truncate();

SELECT idempo.grant_execute('idempo.listing_truncate()');
