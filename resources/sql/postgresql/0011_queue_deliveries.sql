-- SPDX-License-Identifier: Apache-2.0
-- Schema version 11: every write that ends or retries a delivery can name it. A delivery is a
-- message's msg_id with the read_ct its read answered (each read raises read_ct by one in the
-- read's own transaction). queue_ack has always taken it; queue_archive now does too (a retried
-- archive is done again, an archive of a read the message has had since is refused), and nack,
-- ack and archive refuse a later delivery in the same words (ID006) and a read the message has
-- not had (ID004).

-- queue_archive takes the read it archives (functions/queue/queue_archive.sql).
DROP FUNCTION IF EXISTS idempo.queue_archive(text, bigint, bigint, bigint);

