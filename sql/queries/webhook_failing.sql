-- After a batch of attempts: each endpoint's failing streak begun (its last attempt failed) or
-- ended (succeeded), and the endpoints whose every attempt has failed for $3 seconds, to disable.
-- $1 endpoints, $2 whether each one's last attempt succeeded, $3 seconds.
WITH v AS (
  SELECT * FROM unnest($1::text[], $2::boolean[]) AS v (id, ok)
), moved AS (
  UPDATE webhook_endpoints w
  SET failing_since = CASE WHEN v.ok THEN NULL ELSE now() END
  FROM v
  WHERE w.id = v.id AND (w.failing_since IS NOT NULL) = v.ok
)
SELECT w.id
FROM webhook_endpoints w
JOIN v ON v.id = w.id
WHERE NOT v.ok AND w.failing_since <= now() - make_interval(secs => $3) AND w.status = 'enabled' AND w.deleted_at IS NULL
