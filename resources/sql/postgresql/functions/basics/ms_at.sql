-- SPDX-License-Identifier: Apache-2.0

-- An instant of the ledger's clock (ms since the epoch) as timestamptz. STABLE, as timestamptz +
-- interval is: declared IMMUTABLE it was never inlined, and each of its four calls in a send,
-- read and ack cycle ran through the SQL function machinery (about 17 µs a call).
CREATE OR REPLACE FUNCTION idempo.ms_at(p_ms bigint) RETURNS timestamptz LANGUAGE sql STABLE PARALLEL SAFE
RETURN timestamptz 'epoch' + p_ms * interval '1 millisecond';

SELECT idempo.grant_execute('idempo.ms_at(bigint)', 'idempo_admin', 'idempo_approver', 'idempo_operator', 'idempo_viewer', 'idempo_worker');
