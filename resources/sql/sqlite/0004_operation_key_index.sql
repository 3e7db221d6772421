-- SPDX-License-Identifier: Apache-2.0
-- Schema version 4: key prefix listings across every namespace are a range on operation_key
-- (within one namespace the UNIQUE (namespace, operation_key) index serves). The shared
-- ledger has had the same index, operations_key, since its first version.
CREATE INDEX operations_key ON operations (operation_key);
