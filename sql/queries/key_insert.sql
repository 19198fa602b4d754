-- The new key as api_key_view reads it (the same functions), without a second round trip. The
-- key making it (:checked_key) is checked and held before the row is formed, so ahead of its
-- triggers and locks; NULL inside a change that checked its key itself, or that no key makes.
-- Without a rate limit of its own (:rate_limit NULL) it takes its plan's default; either way it
-- may be no looser than :caller_rate_limit, the making key's (NULL: none, or no key makes it).
INSERT INTO api_keys (id, project_id, created_by, name, secret_hash, key_preview, scope, expires_at, rate_limit)
SELECT :id, :project_id, :created_by, :name, :secret_hash, :key_preview, :scope, to_timestamp(:expires_at), l.rate_limit
FROM (SELECT coalesce(:rate_limit::jsonb, (SELECT p.rate_limit FROM plans p WHERE p.project_id = :project_id)) AS rate_limit) l
WHERE CASE WHEN change_key_check(:checked_key, :project_id) THEN rate_limit_within_caller(l.rate_limit, :caller_rate_limit::jsonb) END
RETURNING id, name, key_preview, scope, key_status(status, expires_at) AS status,
          unix_seconds(expires_at) AS expires_at, unix_seconds(last_used_at) AS last_used_at,
          created_by, unix_seconds(created_at) AS created_at, unix_seconds(updated_at) AS updated_at, rate_limit
