-- A page of a project's events in sequence order, after sequence $2: the columns, and the JSON
-- the API answers for each (null before release gives it one).
SELECT id, type_id, type_name, related_table, related_id, origin, ip_address, details, created_at, sequence, actor_id, hash, body
FROM event_view
WHERE project_id = $1 AND sequence > $2
ORDER BY sequence
LIMIT $3
