-- One page of an endpoint's delivery attempts, newest first, and their total; no row: no such
-- endpoint of the project; an empty page is one row with a null id.
SELECT c.total, a.*
FROM webhook_endpoints w
CROSS JOIN LATERAL (SELECT count(*) AS total FROM webhook_attempts WHERE endpoint_id = w.id) c
LEFT JOIN LATERAL (
  SELECT id, event_id, sequence, attempt, status_code, error, duration_ms, unix_seconds(created_at) AS created_at
  FROM webhook_attempts
  WHERE endpoint_id = w.id
  ORDER BY webhook_attempts.created_at DESC, webhook_attempts.id DESC
  LIMIT (SELECT $3::bigint) OFFSET (SELECT $4::bigint)
) a ON true
WHERE w.id = $1 AND w.project_id = $2 AND w.deleted_at IS NULL
