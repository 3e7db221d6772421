-- SPDX-License-Identifier: Apache-2.0

-- Whether this transaction's stamps were given by a test clock: only the owner may move the
-- clock (idempo.clock_for marks the transaction), so the mark counts for no other login.
CREATE OR REPLACE FUNCTION idempo.test_clock_moved() RETURNS boolean LANGUAGE sql STABLE
RETURN pg_catalog.current_setting('idempo.test_clock', true) IS NOT DISTINCT FROM 'on' AND idempo.is_owner();

SELECT idempo.grant_execute('idempo.test_clock_moved()');
