-- One page of the project's webhook endpoints, newest first, and their total, in one round trip;
-- an empty page still yields one row (with a null id).
SELECT c.total, w.*
FROM (SELECT count(*) AS total FROM webhook_endpoints WHERE project_id = $1 AND deleted_at IS NULL) c
LEFT JOIN LATERAL (
  SELECT id, url, description, types, status, disabled_reason, unix_seconds(created_at) AS created_at, unix_seconds(updated_at) AS updated_at
  FROM webhook_endpoints
  WHERE project_id = $1 AND deleted_at IS NULL
  ORDER BY webhook_endpoints.created_at DESC, webhook_endpoints.id DESC
  LIMIT (SELECT $2::bigint) OFFSET (SELECT $3::bigint)
) w ON true
