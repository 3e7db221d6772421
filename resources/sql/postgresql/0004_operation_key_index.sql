-- SPDX-License-Identifier: Apache-2.0
-- Schema version 4: key prefix listings are a range on operation_key. The shared ledger has had
-- the index since its first version (operation_key is COLLATE "C", so the range is byte order);
-- this version keeps both dialects' schema versions in step and says what the index serves.
COMMENT ON INDEX operations_key IS 'key prefix listings: operation_key >= prefix AND < its successor (byte order)';
