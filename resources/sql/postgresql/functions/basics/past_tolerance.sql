-- SPDX-License-Identifier: Apache-2.0

-- The tolerance of the rule above: whether a write that waited `p_waited_ms` after it read the
-- clock must move a time that lies `p_duration_ms` past its stamp.
CREATE OR REPLACE FUNCTION idempo.past_tolerance(p_waited_ms bigint, p_duration_ms bigint) RETURNS boolean
    LANGUAGE sql IMMUTABLE
RETURN p_duration_ms > 0 AND p_waited_ms > greatest(1, p_duration_ms / 100);

SELECT idempo.grant_execute('idempo.past_tolerance(bigint,bigint)');
