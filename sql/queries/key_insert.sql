-- The new key as api_key_view reads it (the same functions), without a second round trip. The
-- key making it (:checked_key) is checked and held before the row is formed, so ahead of its
-- triggers and locks; NULL inside a change that checked its key itself, or that no key makes.
INSERT INTO api_keys (id, project_id, created_by, name, secret_hash, key_preview, scope, expires_at)
SELECT :id, :project_id, :created_by, :name, :secret_hash, :key_preview, :scope, to_timestamp(:expires_at)
WHERE change_key_check(:checked_key)
RETURNING id, name, key_preview, scope, key_status(status, expires_at) AS status,
          unix_seconds(expires_at) AS expires_at, unix_seconds(last_used_at) AS last_used_at,
          created_by, unix_seconds(created_at) AS created_at, unix_seconds(updated_at) AS updated_at
