-- A batch of events, numbered and hashed by the writer, each with its JSON as the API answers it
-- ($1: a JSON array). An unknown type name fails on type_id NOT NULL instead of dropping the event.
INSERT INTO events (id, project_id, type_id, related_table, related_id, origin, ip_address, details, created_at, sequence, actor_id, hash, body)
SELECT b.id, b.project_id, t.id, b.related_table, b.related_id, b.origin, b.ip_address, b.details,
       to_timestamp(b.created_at), b.sequence, b.actor_id, b.hash, b.body
FROM jsonb_to_recordset($1::jsonb) AS b(
  id text, project_id text, type text, related_table text, related_id text, origin text,
  ip_address text, details jsonb, created_at double precision, sequence bigint, actor_id text, hash text, body text)
LEFT JOIN event_types t ON t.name = b.type
ORDER BY b.project_id, b.sequence
