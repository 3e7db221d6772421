-- SPDX-License-Identifier: Apache-2.0
-- Message queues, schema version 2. Times are milliseconds since the Unix epoch (UTC).
-- The per-queue tables q_<name> and a_<name> (pgmq's layout) are created by createQueue;
-- these two tables hold what pgmq has no place for.
--
-- The registry: every queue with its dead-letter settings. max_reads and dead_letter_queue
-- are NULL for a dead-letter queue itself, which never dead-letters.
CREATE TABLE queue_registry (
    queue_name TEXT PRIMARY KEY,
    max_reads INTEGER CHECK (max_reads IS NULL OR max_reads >= 1),
    dead_letter_queue TEXT,
    created_at INTEGER NOT NULL
);
-- The last error a worker reported (nack) for a message still in its queue; the row goes
-- when the message is deleted, archived or dead-lettered (its copy's headers carry it on).
CREATE TABLE queue_errors (
    queue_name TEXT NOT NULL,
    msg_id INTEGER NOT NULL,
    error_class TEXT NOT NULL,
    error_detail TEXT NOT NULL DEFAULT '',
    recorded_at INTEGER NOT NULL,
    PRIMARY KEY (queue_name, msg_id)
);
