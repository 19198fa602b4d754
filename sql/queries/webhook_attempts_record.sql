-- A batch of finished attempts, in one statement: each logged, and its delivery settled (done: its
-- :retries_in_s NULL) or made due again after that many seconds; each endpoint's failing streak
-- begun (its last attempt failed) or ended; and the endpoints whose every attempt has failed for
-- :failing_disables_after_s returned, to disable. Fenced by the attempt's number: a delivery
-- claimed again since (this worker's lease ran out) is not touched, but the attempt made is still
-- logged. The first ten are arrays, an attempt each; :batch_endpoint_ids and :last_succeeded an
-- endpoint each.
-- Its commit does not wait for the WAL flush: what a crash loses is sent again.
WITH r AS (
  SELECT *
  FROM unnest(:endpoint_ids::text[], :event_ids::text[], :attempts::int[], :attempt_ids::text[], :sequences::bigint[],
              :status_codes::int[], :errors::text[], :durations_ms::int[], :retries_in_s::float8[], :began_ms::float8[])
    AS r (endpoint_id, event_id, attempt, id, sequence, status_code, error, duration_ms, retry_in_s, began_ms)
), settled AS (
  DELETE FROM webhook_deliveries d
  USING r
  WHERE d.endpoint_id = r.endpoint_id AND d.event_id = r.event_id AND d.attempts = r.attempt AND r.retry_in_s IS NULL
), retried AS (
  UPDATE webhook_deliveries d
  SET next_at = now() + make_interval(secs => r.retry_in_s), leased_until = NULL
  FROM r
  WHERE d.endpoint_id = r.endpoint_id AND d.event_id = r.event_id AND d.attempts = r.attempt AND r.retry_in_s IS NOT NULL
), logged AS (
  INSERT INTO webhook_attempts (id, endpoint_id, event_id, sequence, attempt, status_code, error, duration_ms, created_at)
  SELECT id, endpoint_id, event_id, sequence, attempt, status_code, error, duration_ms, to_timestamp(began_ms / 1000.0)
  FROM r, (SELECT set_config('synchronous_commit', 'off', true)) async_commit
), v AS (
  SELECT * FROM unnest(:batch_endpoint_ids::text[], :last_succeeded::boolean[]) AS v (id, ok)
), moved AS (
  UPDATE webhook_endpoints w
  SET failing_since = CASE WHEN v.ok THEN NULL ELSE now() END
  FROM v
  WHERE w.id = v.id AND (w.failing_since IS NOT NULL) = v.ok
)
-- The statement's snapshot: failing_since as it was before `moved`, as the streak's start.
SELECT w.id
FROM webhook_endpoints w
JOIN v ON v.id = w.id
WHERE NOT v.ok AND w.failing_since <= now() - make_interval(secs => :failing_disables_after_s) AND w.status = 'enabled' AND w.deleted_at IS NULL
