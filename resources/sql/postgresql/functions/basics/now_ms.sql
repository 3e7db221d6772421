-- SPDX-License-Identifier: Apache-2.0

-- The ledger's clock in milliseconds since the epoch: the server's clock_timestamp(), or a
-- pinned instant, plus an offset (tests). Reading it is open to every role; the write
-- functions take the same two arguments and accept them from the owner only (idempo.clock_for).
CREATE OR REPLACE FUNCTION idempo.now_ms(p_clock_pinned_ms bigint DEFAULT NULL, p_clock_offset_ms bigint DEFAULT 0)
    RETURNS bigint LANGUAGE sql VOLATILE
RETURN coalesce(p_clock_pinned_ms, pg_catalog.floor(pg_catalog.date_part('epoch', pg_catalog.clock_timestamp())
                                                    * 1000)::bigint)
       + coalesce(p_clock_offset_ms, 0);

SELECT idempo.grant_execute('idempo.now_ms(bigint,bigint)', 'idempo_admin', 'idempo_approver', 'idempo_operator', 'idempo_viewer', 'idempo_worker');
