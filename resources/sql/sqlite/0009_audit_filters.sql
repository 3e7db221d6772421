-- SPDX-License-Identifier: Apache-2.0
-- Audit filters in SQL (LedgerStore::auditRecords): an index per filter the Audit view and
-- `idempo audit list` offer, each ending in seq so that an equality filter reads its records
-- already in seq order, a page at a time. audit_log_target (target, seq) serves the target, its
-- prefix and the namespace (targets "ns/…") since 0005.
CREATE INDEX audit_log_who ON audit_log (who, seq);
CREATE INDEX audit_log_action ON audit_log (action, seq);
CREATE INDEX audit_log_at ON audit_log (at_ms, seq);
