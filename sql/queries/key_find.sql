SELECT id, name, key_preview, scope, status, expires_at, last_used_at, created_by, created_at, updated_at, rate_limit
FROM api_key_view
WHERE id = $1 AND project_id = $2 AND stored_status <> 'revoked'
