-- The gateway's one query per request: the key by the SHA-256 of its secret, with the state of
-- its project and consumer. The caller decides 401 / 403 from the row (or its absence).
SELECT v.id, v.project_id, v.name, v.key_preview, v.scope, v.status, v.expires_at, v.last_used_at,
       v.created_by, v.created_at, v.updated_at,
       p.status AS project_status, c.status AS consumer_status
FROM api_keys k
JOIN api_key_view v ON v.id = k.id
JOIN projects p ON p.id = k.project_id
JOIN consumers c ON c.id = k.created_by
WHERE k.secret_hash = $1
