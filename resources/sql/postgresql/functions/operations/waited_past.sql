-- SPDX-License-Identifier: Apache-2.0

-- Whether the operation `o` a function wrote must be judged again (idempo.settle_writes): its
-- clock has moved on past the tolerance of its shortest expiry. One clock read and a comparison,
-- so the hot path pays nothing more when nothing waited.
CREATE OR REPLACE FUNCTION idempo.waited_past(o idempo.operations) RETURNS boolean LANGUAGE sql VOLATILE
RETURN idempo.past_tolerance(idempo.now_ms() - (o).updated_at_ms,
                             least((o).lease_expires_at_ms, (o).next_attempt_at_ms, (o).retention_expires_at_ms)
                             - (o).updated_at_ms);

SELECT idempo.grant_execute('idempo.waited_past(operations)');
