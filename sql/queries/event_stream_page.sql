-- A page of a project's events for its streams: after sequence $2 up to $3, oldest first,
-- optionally only of the type names $4 and of the actor $5.
SELECT id, type_id, type_name, related_table, related_id, origin, ip_address, details, created_at, sequence, actor_id, hash
FROM event_view
WHERE project_id = $1 AND sequence > $2 AND sequence <= $3
  AND ($4::text[] IS NULL OR type_name = ANY($4::text[]))
  AND ($5::text[] IS NULL OR actor_id = ANY($5::text[]))
ORDER BY sequence
LIMIT $6
