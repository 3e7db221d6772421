-- SPDX-License-Identifier: Apache-2.0
-- Schema version 3: what an operation moves, in minor units of an ISO 4217 currency, as its
-- first claim declared it; NULL when undeclared. Approval thresholds and the review order of
-- the console read it.
ALTER TABLE operations ADD COLUMN value_minor INTEGER CHECK (value_minor IS NULL OR value_minor >= 0);
ALTER TABLE operations ADD COLUMN value_currency TEXT
    CHECK ((value_currency IS NULL) = (value_minor IS NULL));
CREATE INDEX operations_state_value ON operations (state, value_minor, id);
