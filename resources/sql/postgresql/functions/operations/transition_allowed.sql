-- SPDX-License-Identifier: Apache-2.0

-- The transition table (transitiontable.cpp).
CREATE OR REPLACE FUNCTION idempo.transition_allowed(p_from text, p_to text) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN (p_from || '>' || p_to) IN (
    'received>dispatching', 'received>failed_terminal', 'awaiting_approval>received',
    'awaiting_approval>failed_terminal', 'dispatching>dispatching', 'dispatching>succeeded',
    'dispatching>failed_retryable', 'dispatching>unknown_outcome', 'dispatching>confirmation_required',
    'dispatching>failed_terminal', 'failed_retryable>dispatching', 'failed_retryable>confirmation_required',
    'failed_retryable>failed_terminal', 'unknown_outcome>succeeded', 'unknown_outcome>received',
    'unknown_outcome>confirmation_required', 'unknown_outcome>failed_terminal', 'confirmation_required>succeeded',
    'confirmation_required>received', 'confirmation_required>failed_terminal');

SELECT idempo.grant_execute('idempo.transition_allowed(text,text)');
