-- SPDX-License-Identifier: Apache-2.0
-- Message queues, schema version 2. Times are bigint milliseconds since the Unix epoch, computed
-- on the server like the ledger's. The per-queue tables q_<name> and a_<name> (pgmq's layout, in
-- the schema PostgresMessageQueue::Schema, "pgmq") are created by createQueue (`idempo queue
-- create`), which also grants on them; these two tables hold what pgmq has no place for and live
-- beside the ledger's tables.
--
-- The registry: every queue with its dead-letter settings. max_reads and dead_letter_queue are
-- NULL for a dead-letter queue itself, which never dead-letters. Names sort bytewise ("C"), as
-- on SQLite.
CREATE TABLE queue_registry (
    queue_name text COLLATE "C" PRIMARY KEY,
    max_reads integer CHECK (max_reads IS NULL OR max_reads >= 1),
    dead_letter_queue text COLLATE "C",
    created_at_ms bigint NOT NULL
);

-- The last error a worker reported (nack) for a message still in its queue; the row goes when
-- the message is deleted, archived or dead-lettered (its copy's headers carry it on).
CREATE TABLE queue_errors (
    queue_name text COLLATE "C" NOT NULL,
    msg_id bigint NOT NULL,
    error_class text NOT NULL,
    error_detail text NOT NULL DEFAULT '',
    recorded_at_ms bigint NOT NULL,
    PRIMARY KEY (queue_name, msg_id)
);

-- Workers read the registry and keep the last errors; viewers and approvers read both. Creating
-- a queue is schema work and stays with the schema owner, like migrating.
DO $$
BEGIN
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'idempo_viewer') THEN
        GRANT SELECT ON queue_registry, queue_errors TO idempo_viewer;
    END IF;
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'idempo_approver') THEN
        GRANT SELECT ON queue_registry, queue_errors TO idempo_approver;
    END IF;
    IF EXISTS (SELECT FROM pg_roles WHERE rolname = 'idempo_worker') THEN
        GRANT SELECT ON queue_registry TO idempo_worker;
        GRANT SELECT, INSERT, UPDATE, DELETE ON queue_errors TO idempo_worker;
    END IF;
END
$$;
