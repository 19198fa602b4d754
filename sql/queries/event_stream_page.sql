-- A page of a project's events for its streams: after sequence $2 up to $3, oldest first,
-- optionally only of the type names $4 and of the actor $5; what a stream filters on, and the
-- event's JSON as stored.
SELECT sequence, type_name, actor_id, body
FROM event_view
WHERE project_id = $1 AND sequence > $2 AND sequence <= $3
  AND ($4::text[] IS NULL OR type_name = ANY($4::text[]))
  AND ($5::text[] IS NULL OR actor_id = ANY($5::text[]))
ORDER BY sequence
LIMIT $6
