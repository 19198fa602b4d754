-- The last sequence of each of these projects (0 for one without events).
SELECT p AS project_id, coalesce(c.total, 0)::bigint AS last_sequence
FROM unnest($1::text[]) AS p
LEFT JOIN project_event_counts c ON c.project_id = p
