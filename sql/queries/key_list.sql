-- One page of the project's listed keys, newest first, and the total, in one round trip. The
-- total sums the counter rows; an empty page still yields one row (with a null id).
-- The limit and offset are sub-selects, values the planner cannot see, so the page reads the
-- index in order and stops whatever the statistics say of the project (sql/queries/event_list.sql
-- says why; test/keys/list.test.ts).
SELECT c.total, k.*
FROM (SELECT coalesce((SELECT sum(keys) FROM project_counts WHERE project_id = $1), 0)::bigint AS total) c
LEFT JOIN LATERAL (
  SELECT id, name, key_preview, scope, status, expires_at, last_used_at, created_by, created_at, updated_at, rate_limit
  FROM api_key_view
  WHERE project_id = $1 AND stored_status <> 'revoked'
  ORDER BY created_ts DESC, id DESC
  LIMIT (SELECT $2::bigint) OFFSET (SELECT $3::bigint)
) k ON true
