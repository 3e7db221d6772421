-- SPDX-License-Identifier: Apache-2.0
-- Schema version 21: an operation whose payload has an /amount that cannot be read takes two
-- approvers. idempo.operation_value gave no value for it (a negative amount, 10^14 and more, a
-- string with more decimals than the currency has, a boolean), and approve let one approver
-- through; it now answers the most a bigint holds, in no currency, which needs_four_eyes always
-- gates while four-eyes is on. money.h operationValueUnreadable() is the same rule for the
-- embedded ledger. Replaced whole (CREATE OR REPLACE keeps its grants); only the last branch
-- changes.

