-- SPDX-License-Identifier: Apache-2.0
-- Schema version 27: the ledger's functions live one to a file under functions/ (README.md), and
-- the numbered migrations change tables and data only. `idempo init` creates every function from
-- those files after the migrations, whenever the schema version moves, the files change or the
-- functions were changed by hand; this table records which set of files the ledger runs (the
-- SHA-256 of their paths and texts, in path order) and what they made (the SHA-256 of every
-- function's definition and grants and of the triggers that call them), so a changed body
-- reaches a ledger without a new schema version and a hand edit is undone.
CREATE TABLE idempo.schema_functions (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    sha256 text NOT NULL,
    catalog_sha256 text NOT NULL,
    files integer NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
REVOKE ALL ON idempo.schema_functions FROM PUBLIC;

DO $$
DECLARE
    r text;
BEGIN
    FOR r IN SELECT rolname FROM pg_catalog.pg_roles
             WHERE rolname IN ('idempo_worker', 'idempo_viewer', 'idempo_approver', 'idempo_operator', 'idempo_admin') LOOP
        EXECUTE pg_catalog.format('GRANT SELECT ON idempo.schema_functions TO %I', r);
    END LOOP;
END
$$;
