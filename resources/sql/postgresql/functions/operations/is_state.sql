-- SPDX-License-Identifier: Apache-2.0

CREATE OR REPLACE FUNCTION idempo.is_state(p_state text) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN p_state IN ('received', 'awaiting_approval', 'dispatching', 'succeeded', 'failed_retryable', 'unknown_outcome',
                   'confirmation_required', 'failed_terminal');

SELECT idempo.grant_execute('idempo.is_state(text)');
