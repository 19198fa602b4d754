-- Idempotent: a retried job finds its event already written and inserts nothing.
-- An unknown type name fails on type_id NOT NULL instead of dropping the event.
INSERT INTO events (id, project_id, type_id, related_table, related_id, origin, ip_address, details, created_at)
VALUES ($1, $2, (SELECT id FROM event_types WHERE name = $3), $4, $5, $6, $7, $8::jsonb, to_timestamp($9))
ON CONFLICT (id) DO NOTHING
RETURNING id
