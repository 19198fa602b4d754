SELECT id, name, key_preview, scope, status, expires_at, last_used_at, created_by, created_at, updated_at
FROM api_key_view
WHERE project_id = $1 AND status <> 'revoked'
ORDER BY created_ts DESC, id DESC
LIMIT $2 OFFSET $3
