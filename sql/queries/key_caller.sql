-- The calling key as stored, for a key the gateway knew from memory: what GET /v1/key/current
-- answers, written as the API's key object (keyView in domain/keys.ts: the same members in the
-- same order; test/keys/known-keys.test.ts holds the two to the same bytes), and the key's check
-- in the same statement (no row: refused; status expired: 401).
SELECT k.status, row_to_json(k)::text AS json
FROM (
  SELECT id, 'api_key' AS object, name, key_preview, scope, status, expires_at, last_used_at, created_by, created_at, updated_at
  FROM api_key_usable
  WHERE id = $1
) k
