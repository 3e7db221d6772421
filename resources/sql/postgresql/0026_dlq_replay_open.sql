-- SPDX-License-Identifier: Apache-2.0
-- Schema version 26: a dead letter is in at most one open replay at a time (docs/sql-api.md,
-- "DLQ replay").
--
-- Two replays of one set by one identity share their replay id: the second begin reopened the
-- first's row, both requeued, and the one that finished second found its replay closed (ID005)
-- after doing its work; the audit log had one finish record for the work of both. Now a begin
-- whose set meets an open replay of the queue (or names an open replay id) is refused up front
-- with ID009 (in_progress), naming the replay, its login and identity, and since when.
--
-- An open replay is alive while its runner requeues: each requeue stamps beat_at_ms on the
-- ledger's clock, and a replay silent for longer than its idle_limit_ms (given at its begin,
-- 1 s to 7 days, 5 minutes by default) counts as abandoned. A begin then takes it over: its
-- `dlq_replay` record names each abandoned replay (`took_over`), the abandoned row is closed
-- (taken_over_seq), and its runner, should it come back, is fenced off: its requeues and its
-- finish name the run they belong to (p_begun_seq, the seq of its `dlq_replay` record) and are
-- refused with ID008 naming the run that took it over.
ALTER TABLE idempo.dlq_replays
    ADD COLUMN beat_at_ms bigint,
    ADD COLUMN idle_limit_ms bigint NOT NULL DEFAULT 300000,
    ADD COLUMN taken_over_seq bigint;
UPDATE idempo.dlq_replays SET beat_at_ms = created_at_ms;
ALTER TABLE idempo.dlq_replays ALTER COLUMN beat_at_ms SET NOT NULL;

DROP FUNCTION IF EXISTS idempo.dlq_replay_begin(text, text, bigint[], text, text, text, text, bigint, bigint);
DROP FUNCTION IF EXISTS idempo.dlq_replay_finish(text, text, text, text, text, text, bigint, bigint);
DROP FUNCTION IF EXISTS idempo.queue_requeue_dead_letter(text, bigint, text, text, bigint, bigint);

