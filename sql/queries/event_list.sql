-- The project's newest events and the total from the counter row, in one round trip
-- (no events: one row with a null id).
SELECT c.total, e.*
FROM (SELECT coalesce((SELECT total FROM project_event_counts WHERE project_id = $1), 0) AS total) c
LEFT JOIN LATERAL (
  SELECT id, type_id, type_name, related_table, related_id, origin, ip_address, details, created_at, sequence, actor_id, hash
  FROM event_view
  WHERE project_id = $1
  ORDER BY created_ts DESC, sequence DESC
  LIMIT $2
) e ON true
