-- One statement for a whole batch of audit jobs ($1: a JSON array of AuditJob).
-- Idempotent: a redelivered job finds its event already written and is neither inserted nor counted.
-- An unknown type name fails on type_id NOT NULL instead of dropping the event.
-- Counts are bumped in project order so two writers never wait on each other in a cycle.
WITH batch AS (
  SELECT DISTINCT ON (j.id) j.*
  FROM jsonb_to_recordset($1::jsonb) AS j(
    id text, project_id text, type text, related_table text, related_id text,
    origin text, ip_address text, details jsonb, created_at double precision)
  ORDER BY j.id
), inserted AS (
  INSERT INTO events (id, project_id, type_id, related_table, related_id, origin, ip_address, details, created_at)
  SELECT b.id, b.project_id, t.id, b.related_table, b.related_id, b.origin, b.ip_address, b.details, to_timestamp(b.created_at)
  FROM batch b LEFT JOIN event_types t ON t.name = b.type
  ORDER BY b.id
  ON CONFLICT (id) DO NOTHING
  RETURNING project_id
), counted AS (
  INSERT INTO project_event_counts AS c (project_id, total)
  SELECT project_id, count(*) FROM inserted GROUP BY project_id ORDER BY project_id
  ON CONFLICT (project_id) DO UPDATE SET total = c.total + EXCLUDED.total
)
SELECT count(*)::int AS written FROM inserted
