-- The chain head of each of these projects as the audit writer keeps it: the last sequence (0 for
-- one without events) and that event's hash (null without events). The streams read where each
-- project's trail has got to; `events verify` holds the walked chain to it.
SELECT p AS project_id, coalesce(c.total, 0)::bigint AS last_sequence, c.last_hash
FROM unnest($1::text[]) AS p
LEFT JOIN project_event_counts c ON c.project_id = p
