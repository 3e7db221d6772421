-- SPDX-License-Identifier: Apache-2.0
-- Schema 15: audit filters in SQL (LedgerStore::auditRecords). An index per filter the Audit
-- view and `idempo audit list` offer, each ending in seq so that an equality filter reads its
-- records already in seq order, a page at a time. audit_log_target (target COLLATE "C", seq)
-- serves the target, its prefix and the namespace (targets "ns/…") since schema 5.
CREATE INDEX audit_log_who ON idempo.audit_log (who, seq);
CREATE INDEX audit_log_action ON idempo.audit_log (action, seq);
CREATE INDEX audit_log_at ON idempo.audit_log (at_ms, seq);
