-- A page of a project's events for its streams: after sequence $2 up to $3, oldest first,
-- optionally only of the type names $4 and of the actors $5; what a stream filters on, and the
-- event's JSON as stored. The actor is the event's as served (domain/events.ts eventView, and so
-- as hashed): a key only for a change made through the API, whatever the column holds otherwise.
SELECT sequence, type_name, actor, body
FROM (
  SELECT sequence, type_name, CASE WHEN origin = 'api' THEN actor_id END AS actor, body
  FROM event_view
  WHERE project_id = $1 AND sequence > $2 AND sequence <= $3
) page
WHERE ($4::text[] IS NULL OR type_name = ANY($4::text[]))
  AND ($5::text[] IS NULL OR actor = ANY($5::text[]))
ORDER BY sequence
LIMIT $6
