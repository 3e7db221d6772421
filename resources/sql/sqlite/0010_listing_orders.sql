-- SPDX-License-Identifier: Apache-2.0
-- Schema version 10: the console's lists order by last change, by value and by key in the store,
-- keyset paged by (column, id). SQLite appends the rowid (id) to every index entry, so each index
-- serves its order, the ties and the cursor's range. Without a state the single-column indexes
-- serve (key order: operations_key, version 4); with one, SQLite (no statistics) takes the state's
-- index and sorted every record of a common state (13 s for 980,000 of 1,000,000): the
-- (state, column) indexes give it the order within the state.
CREATE INDEX operations_updated ON operations (updated_at_ms);
CREATE INDEX operations_value ON operations (coalesce(value_minor, -1));
CREATE INDEX operations_state_updated ON operations (state, updated_at_ms);
CREATE INDEX operations_state_value_order ON operations (state, coalesce(value_minor, -1));
CREATE INDEX operations_state_key ON operations (state, operation_key);
