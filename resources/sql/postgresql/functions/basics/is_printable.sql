-- SPDX-License-Identifier: Apache-2.0

-- Keys, run and step ids, targets and labels (operationkey.h): at most `max_bytes` bytes of
-- UTF-8, no white space at either end, no control or format characters, no line or paragraph
-- separators. Unassigned code points are refused by the engine's own check, not here.
CREATE OR REPLACE FUNCTION idempo.is_printable(p_value text, p_max_bytes integer) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
RETURN p_value IS NOT NULL AND pg_catalog.octet_length(p_value) <= p_max_bytes
    AND p_value !~ '^[\s\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]'
    AND p_value !~ '[\s\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]$'
    AND p_value !~ '[\u0001-\u001f\u007f-\u009f\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f]';

SELECT idempo.grant_execute('idempo.is_printable(text,integer)', 'idempo_admin', 'idempo_approver', 'idempo_operator', 'idempo_viewer', 'idempo_worker');
