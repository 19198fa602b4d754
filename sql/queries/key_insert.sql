INSERT INTO api_keys (id, project_id, created_by, name, secret_hash, key_preview, scope, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, to_timestamp($8))
RETURNING id
