-- Turns the events an enabled endpoint has not looked at yet into deliveries owed to it: at most $2
-- events per endpoint, those its types match, and moves its `fanned_out` past them. Endpoints
-- another worker is fanning out are skipped (SKIP LOCKED). The head and the events are read in one
-- snapshot, and a project's sequences commit in order, so none is ever passed over. Its commit
-- does not wait for the WAL flush: lost with a crash, the rows and the cursor go together.
-- $1 the projects whose events moved (NULL: every project), $2 events per endpoint.
-- The endpoints are locked apart from the heads they are compared with: on Citus the endpoints are
-- the coordinator's and the heads the shards', and Citus locks rows only in a statement of one
-- node's tables (docs/citus.md). An endpoint with nothing due is locked for this statement too.
WITH locked AS MATERIALIZED (
  SELECT e.id, e.project_id, e.types, e.fanned_out
  FROM webhook_endpoints e
  WHERE e.status = 'enabled' AND e.deleted_at IS NULL AND ($1::text[] IS NULL OR e.project_id = ANY ($1::text[]))
  FOR UPDATE OF e SKIP LOCKED
), due AS MATERIALIZED (
  SELECT e.id, e.project_id, e.types, e.fanned_out, c.total AS head
  FROM locked e
  JOIN project_event_counts c ON c.project_id = e.project_id
  WHERE e.fanned_out < c.total
), queued AS (
  INSERT INTO webhook_deliveries (endpoint_id, event_id, sequence)
  SELECT d.id, ev.id, ev.sequence
  FROM due d
  JOIN events ev ON ev.project_id = d.project_id AND ev.sequence > d.fanned_out AND ev.sequence <= least(d.head, d.fanned_out + $2::bigint)
  JOIN event_types t ON t.id = ev.type_id
  WHERE cardinality(d.types) = 0 OR t.name = ANY (d.types)
  ON CONFLICT (endpoint_id, event_id) DO NOTHING
  RETURNING 1
), advanced AS (
  UPDATE webhook_endpoints e SET fanned_out = least(d.head, d.fanned_out + $2::bigint)
  FROM due d
  WHERE e.id = d.id
)
SELECT set_config('synchronous_commit', 'off', true) AS async_commit, (SELECT count(*) FROM queued) AS queued, coalesce(bool_or(d.head > d.fanned_out + $2::bigint), false) AS more
FROM due d
