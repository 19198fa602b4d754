-- Each event's JSON as the API answers it (domain/events.ts eventView, `hash` included), written
-- once with the event by the audit writer. An event never changes after it is written, so the
-- feed, a lookup and the streams send it as stored instead of building it again for every reader.
-- Rows of before this column get theirs from release (domain/audit-chain.ts backfillChains)
-- before any writer runs. NOT VALID: the check holds for every row written from now on, so a
-- writer of an older build fails (and its batch is retried) instead of writing an event without it.
ALTER TABLE events ADD COLUMN body text;
ALTER TABLE events ADD CONSTRAINT events_body_written CHECK (body IS NOT NULL) NOT VALID;

-- The view the chain's walk and the streams read: the JSON after the columns it was made from.
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
  e.hash,
  e.body
FROM events e
JOIN event_types t ON t.id = e.type_id;
