-- The audit trail in order, attributed and chained:
--  sequence  the project's running number from 1, no gaps, given under the chain row's lock;
--  actor_id  the key that made an API change (null for the workspace and the service itself);
--  hash      hex SHA-256 of the previous event's hash and the event's RFC 8785 JSON.
-- project_event_counts becomes the chain's head: `total` is the last sequence, `last_hash` its hash.
ALTER TABLE events ADD COLUMN sequence bigint, ADD COLUMN actor_id text, ADD COLUMN hash text;

-- Existing events: numbered in the order they were made; `release` hashes them (backfillChains).
UPDATE events e SET sequence = n.sequence
FROM (SELECT id, row_number() OVER (PARTITION BY project_id ORDER BY created_at, id) AS sequence FROM events) n
WHERE n.id = e.id;
ALTER TABLE events ALTER COLUMN sequence SET NOT NULL;
CREATE UNIQUE INDEX events_project_sequence ON events (project_id, sequence);

DROP INDEX events_project_newest;
CREATE INDEX events_project_newest ON events (project_id, created_at DESC, sequence DESC);

ALTER TABLE project_event_counts ADD COLUMN last_hash text;
UPDATE project_event_counts c
SET total = coalesce((SELECT max(e.sequence) FROM events e WHERE e.project_id = c.project_id), 0);

CREATE OR REPLACE VIEW event_view AS
SELECT
  e.id,
  e.project_id,
  t.id AS type_id,
  t.name AS type_name,
  e.related_table,
  e.related_id,
  e.origin,
  e.ip_address,
  e.details,
  unix_seconds(e.created_at) AS created_at,
  e.created_at AS created_ts,
  e.sequence,
  e.actor_id,
  e.hash
FROM events e
JOIN event_types t ON t.id = e.type_id;
