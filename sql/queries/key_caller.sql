-- The calling key as stored, for a key the gateway knew from memory: what GET /v1/key/current
-- answers, and the key's check in the same statement (no row: refused; status expired: 401).
SELECT id, project_id, name, key_preview, scope, status, expires_at, last_used_at, created_by, created_at, updated_at
FROM api_key_usable
WHERE id = $1
