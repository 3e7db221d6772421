-- SPDX-License-Identifier: Apache-2.0
-- Schema version 12: the open DLQ replays, with the rule of PostgreSQL's schema 26
-- (sqlitedlqreplays.h): a dead letter is in at most one live open replay of its queue; a
-- replay whose runner requeued nothing for idle_limit_ms is abandoned and taken over by the next
-- begin, which fences its runner off (begun_seq). msg_ids is a JSON array of the frozen set.
CREATE TABLE dlq_replays (replay_id TEXT PRIMARY KEY, queue_name TEXT NOT NULL, who TEXT NOT NULL, msg_ids TEXT NOT NULL, begun_seq INTEGER NOT NULL, finished_seq INTEGER, created_at_ms INTEGER NOT NULL, beat_at_ms INTEGER NOT NULL, idle_limit_ms INTEGER NOT NULL, taken_over_seq INTEGER);
CREATE INDEX dlq_replays_open ON dlq_replays (queue_name) WHERE finished_seq IS NULL;
