-- A change's BEGIN (or savepoint) with the key check in the same message (simple protocol: the key is a literal),
-- so the check costs no round trip. It holds the key and its owners until the change ends, so a
-- revocation or a disable waits for it.
{{begin}}; SELECT key_change_status({{key}}, {{project}}) AS key_check
