-- A replay asked in one statement (domain/webhooks.ts replayWebhook): the caller's key checked and
-- held first (change_key_check, sql/migrations/0017), the project's endpoint locked, then the
-- events after $3 up to the project's head that the endpoint's types match counted and, for an
-- enabled endpoint, the range kept on it for the worker to queue (merged with one still pending),
-- with a notice on $5 (delivered at commit) so the workers queue it at once, not at their sweep.
-- No row: no such endpoint of the project.
-- $1 endpoint, $2 project, $3 after (a sequence), $4 the key to check (NULL: none), $5 the channel.
WITH checked AS MATERIALIZED (
  SELECT change_key_check($4, $2) AS ok
), head AS MATERIALIZED (
  -- Read apart: on Citus the endpoints are the coordinator's, the head a shard's (docs/citus.md).
  SELECT coalesce((SELECT c.total FROM project_event_counts c WHERE c.project_id = $2), 0) AS total
), w AS MATERIALIZED (
  SELECT e.id, e.status, e.types, e.replay_from, e.replay_to
  FROM webhook_endpoints e
  WHERE (SELECT ok FROM checked) AND e.id = $1 AND e.project_id = $2 AND e.deleted_at IS NULL
  FOR UPDATE OF e
), queued AS (
  UPDATE webhook_endpoints e
  SET replay_from = least(coalesce(w.replay_from, $3::bigint), $3::bigint), replay_to = greatest(coalesce(w.replay_to, 0), h.total)
  FROM w, head h
  WHERE e.id = w.id AND w.status = 'enabled' AND h.total > $3::bigint
), matched AS MATERIALIZED (
  -- Counted apart from the locked row, as the head is read.
  SELECT count(*) AS n FROM events ev JOIN event_types t ON t.id = ev.type_id
  WHERE ev.project_id = $2 AND ev.sequence > $3::bigint AND ev.sequence <= (SELECT total FROM head)
    AND (cardinality((SELECT types FROM w)) = 0 OR t.name = ANY ((SELECT types FROM w)::text[]))
)
SELECT w.status, m.n AS queued,
       CASE WHEN w.status = 'enabled' AND m.n > 0 THEN pg_notify($5, $2) END AS notified
FROM w, matched m
