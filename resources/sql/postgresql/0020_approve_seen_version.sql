-- SPDX-License-Identifier: Apache-2.0
-- Schema version 20: an approval applies to the operation as its approver saw it. A client
-- decides on what it read (the console's dialog, a bulk set frozen at each operation's version);
-- by the time idempo.approve runs, the operation may have left the state and come back to it
-- (approved, dispatched, failed, awaiting approval again), which the state check alone cannot
-- tell. idempo.approve_seen takes the operation_version the decision was made on and refuses
-- (ID007, nothing written) when the operation has moved since; under the row lock it holds,
-- idempo.approve then decides as before. A replayed approval id answers as it did, whatever
-- the version now.

