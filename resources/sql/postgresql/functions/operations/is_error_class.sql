-- SPDX-License-Identifier: Apache-2.0

CREATE OR REPLACE FUNCTION idempo.is_error_class(p_class text) RETURNS boolean LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN p_class IN ('transient', 'rate_limited', 'validation', 'auth', 'policy_denied', 'unknown_outcome', 'stale_lease');

SELECT idempo.grant_execute('idempo.is_error_class(text)');
