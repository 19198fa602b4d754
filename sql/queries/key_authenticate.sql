-- The gateway's lookup of a key it does not know yet: the usable key by the SHA-256 of its
-- secret, in the project the secret names (or key_route.sql finds), so on Citus one shard's
-- (docs/citus.md). A secret naming another project finds nothing. Revoked keys and keys whose project or consumer is disabled return no row, exactly
-- like an unknown secret, so every refusal takes the same path and nearly the same time. An
-- expired key does return its row: it is refused with its own answer (401).
SELECT id, project_id, name, key_preview, scope, status, expires_at, last_used_at, created_by, created_at, updated_at, rate_limit
FROM api_key_usable
WHERE secret_hash = $1 AND project_id = $2
