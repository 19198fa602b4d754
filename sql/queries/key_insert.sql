-- The new key as api_key_view reads it (the same functions), without a second round trip.
INSERT INTO api_keys (id, project_id, created_by, name, secret_hash, key_preview, scope, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, to_timestamp($8))
RETURNING id, name, key_preview, scope, key_status(status, expires_at) AS status,
          unix_seconds(expires_at) AS expires_at, unix_seconds(last_used_at) AS last_used_at,
          created_by, unix_seconds(created_at) AS created_at, unix_seconds(updated_at) AS updated_at
