-- SPDX-License-Identifier: Apache-2.0
-- Schema version 6: acknowledged deliveries. An ack names the read it acknowledges (msg_id and
-- the read_ct that read answered); the message row goes, and this receipt stays a day, so that
-- the same ack repeated after a lost answer is told `done` and an ack of an older read is told
-- apart from one of a message the queue never held. One row per message: its latest ack.
CREATE TABLE queue_acks (
    queue_name TEXT NOT NULL,
    msg_id INTEGER NOT NULL,
    read_ct INTEGER NOT NULL,
    acked_at INTEGER NOT NULL,
    PRIMARY KEY (queue_name, msg_id)
);
CREATE INDEX queue_acks_acked_at ON queue_acks (acked_at);
