-- A change's BEGIN with the key check riding in the same message (simple query protocol, so the
-- key id is a quoted literal): the check costs the transaction no round trip of its own. The
-- function (sql/migrations/0009) keeps the check's plan from one change to the next.
BEGIN; SELECT key_usable_status({{key}}) AS key_check
