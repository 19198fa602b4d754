-- The gateway's one query per request: the usable key by the SHA-256 of its secret. Revoked
-- keys and keys whose project or consumer is disabled return no row, exactly like an unknown
-- secret, so every refusal takes the same path and nearly the same time. An expired key does
-- return its row: it is refused with its own answer (401).
SELECT v.id, v.project_id, v.name, v.key_preview, v.scope, v.status, v.expires_at, v.last_used_at,
       v.created_by, v.created_at, v.updated_at
FROM api_keys k
JOIN api_key_view v ON v.id = k.id
JOIN projects p ON p.id = k.project_id AND p.status = 'active'
JOIN consumers c ON c.id = k.created_by AND c.status = 'active'
WHERE k.secret_hash = $1 AND k.status <> 'revoked'
