-- Schema version 11: each audit record also carries the hash of its target's previous record
-- (auditchain.h), so an operation's records show on their own that none is missing and an
-- evidence pack needs no other target's records. Records written before keep '' (no link) and
-- hash as they did.
ALTER TABLE audit_log ADD COLUMN target_prev_hash TEXT NOT NULL DEFAULT '';
