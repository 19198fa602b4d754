-- The new key as api_key_view reads it (the same functions), without a second round trip. $9 the
-- key that makes it, checked and held first (change_key_check, sql/migrations/0017: the insert's
-- one row is formed only once the check has passed, ahead of the row's triggers and its locks);
-- NULL inside a change that checked its key itself, or that no key makes (the workspace's).
INSERT INTO api_keys (id, project_id, created_by, name, secret_hash, key_preview, scope, expires_at)
SELECT $1, $2, $3, $4, $5, $6, $7, to_timestamp($8)
WHERE change_key_check($9)
RETURNING id, name, key_preview, scope, key_status(status, expires_at) AS status,
          unix_seconds(expires_at) AS expires_at, unix_seconds(last_used_at) AS last_used_at,
          created_by, unix_seconds(created_at) AS created_at, unix_seconds(updated_at) AS updated_at
