UPDATE api_keys
SET status = 'revoked', updated_at = now_seconds()
WHERE id = $1 AND project_id = $2 AND status <> 'revoked'
RETURNING id, name, unix_seconds(updated_at) AS updated_at
