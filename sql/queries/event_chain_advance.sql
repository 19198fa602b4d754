-- Moves the chain heads past a batch's events and tells every web process's event stream
-- (delivered when this transaction commits, so a listener never reads ahead of the rows). The
-- notice is sent by the statement's own last step, not by the UPDATE's rows: on Citus those are
-- on the workers, and the web processes listen on the coordinator (docs/citus.md).
WITH moved AS (
  UPDATE project_event_counts c
  SET total = v.last_sequence, last_hash = v.last_hash
  FROM unnest($1::text[], $2::bigint[], $3::text[]) AS v(project_id, last_sequence, last_hash)
  WHERE c.project_id = v.project_id
  RETURNING c.project_id, c.total
)
SELECT pg_notify($4, moved.project_id || ':' || moved.total) FROM moved
