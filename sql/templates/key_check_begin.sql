-- A change's BEGIN with the key check riding in the same message (simple query protocol, so the
-- key id is a quoted literal): the check costs the transaction no round trip of its own.
BEGIN; SELECT (SELECT status FROM api_key_usable WHERE id = {{key}}) AS key_check
