-- SPDX-License-Identifier: Apache-2.0
-- Schema version 22: only the ledger's functions append audit records, and each record carries
-- the hash of its target's previous record (auditchain.h), so an operation's records show on
-- their own that none is missing and an evidence pack needs no other target's records. Records written before keep '' (no link) and
-- hash as they did; the twelve-field idempo.audit_hash stays for them.
ALTER TABLE idempo.audit_log ADD COLUMN target_prev_hash text NOT NULL DEFAULT '';

