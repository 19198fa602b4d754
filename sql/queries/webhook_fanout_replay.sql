-- A replay's next part: the events of the range kept on an enabled endpoint (replay_from,
-- replay_to], at most $2 of them, queued again if its types match. One already owed is made due
-- now, unless an attempt at it is in flight.
-- $1 the projects to look at (NULL: every project), $2 events per endpoint.
WITH due AS MATERIALIZED (
  SELECT e.id, e.project_id, e.types, e.replay_from, e.replay_to
  FROM webhook_endpoints e
  WHERE e.replay_to IS NOT NULL AND e.status = 'enabled' AND e.deleted_at IS NULL
    AND ($1::text[] IS NULL OR e.project_id = ANY ($1::text[]))
  FOR UPDATE OF e SKIP LOCKED
), queued AS (
  INSERT INTO webhook_deliveries AS w (endpoint_id, event_id, sequence)
  SELECT d.id, ev.id, ev.sequence
  FROM due d
  JOIN events ev ON ev.project_id = d.project_id AND ev.sequence > d.replay_from AND ev.sequence <= least(d.replay_to, d.replay_from + $2::bigint)
  JOIN event_types t ON t.id = ev.type_id
  WHERE cardinality(d.types) = 0 OR t.name = ANY (d.types)
  ON CONFLICT (endpoint_id, event_id) DO UPDATE SET next_at = now() WHERE w.leased_until IS NULL
  RETURNING 1
), advanced AS (
  UPDATE webhook_endpoints e
  SET replay_from = CASE WHEN d.replay_from + $2::bigint < d.replay_to THEN d.replay_from + $2::bigint END,
      replay_to = CASE WHEN d.replay_from + $2::bigint < d.replay_to THEN d.replay_to END
  FROM due d
  WHERE e.id = d.id
)
SELECT set_config('synchronous_commit', 'off', true) AS async_commit, (SELECT count(*) FROM queued) AS queued, coalesce(bool_or(d.replay_from + $2::bigint < d.replay_to), false) AS more
FROM due d
