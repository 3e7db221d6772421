-- SPDX-License-Identifier: Apache-2.0
-- Schema version 18: the console's lists order by last change, by value and by key in the store,
-- keyset paged by (column, id) with ties by id: an index per order, read forwards or backwards
-- (key order without a state reads operations_key, version 1). Within one state (Leases,
-- Confirmations) an order's own index walks past every other state's records (key order of the
-- 0.5 % dispatching of 1,000,000 records: 398 ms), so each order has a (state, column) index too.
CREATE INDEX operations_updated ON idempo.operations (updated_at_ms, id);
CREATE INDEX operations_value ON idempo.operations ((coalesce(value_minor, -1)), id);
CREATE INDEX operations_state_updated ON idempo.operations (state, updated_at_ms, id);
CREATE INDEX operations_state_value_order ON idempo.operations (state, (coalesce(value_minor, -1)), id);
CREATE INDEX operations_state_key ON idempo.operations (state, operation_key, id);
