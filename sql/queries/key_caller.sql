-- The check of a key the gateway knew from memory, and what of the key can have changed since
-- (GET /v1/key/current answers the rest as remembered: no key is ever renamed or rescoped; a roll
-- may shorten its expiry). No row: refused; status expired: 401.
SELECT status, expires_at, last_used_at, updated_at
FROM api_key_usable
WHERE id = $1 AND project_id = $2
