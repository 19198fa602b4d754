-- The calling key as stored, for a key the gateway knew from memory: what GET /v1/key/current
-- answers, and the key's check in the same statement (domain/key-check.ts).
SELECT key_check(id) AS key_check, id, project_id, name, key_preview, scope, status, expires_at, last_used_at,
       created_by, created_at, updated_at
FROM api_key_view
WHERE id = $1
