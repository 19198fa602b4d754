-- A change's BEGIN with the key check riding in the same message (simple query protocol, so the
-- key id is a quoted literal): the check costs the transaction no round trip of its own. The
-- function (sql/migrations/0014) also holds the key and its owners until the change ends, so a
-- revocation or a disable waits for it, and keeps its plan from one change to the next.
BEGIN; SELECT key_change_status({{key}}) AS key_check
