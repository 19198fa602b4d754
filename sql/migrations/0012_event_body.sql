-- Each event's JSON as the API answers it, written once with the event and sent as stored.
-- Existing rows get theirs from release (backfillChains). NOT VALID: the check holds for rows
-- written from now on, so an older writer fails (and retries) rather than omit it.
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
