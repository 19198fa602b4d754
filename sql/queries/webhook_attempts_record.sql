-- A batch of finished attempts: each logged, and its delivery settled (done: $9 NULL) or made due
-- again after $9 seconds. Fenced by the attempt's number: a delivery claimed again since (this
-- worker's lease ran out) is not touched, but the attempt made is still logged.
-- $1 endpoints, $2 events, $3 attempt numbers, $4 attempt ids, $5 sequences, $6 status codes,
-- $7 errors, $8 durations in ms, $9 seconds until the next attempt, $10 when each began (ms).
-- The transaction's commit does not wait for the WAL flush: what a crash loses is sent again.
WITH r AS (
  SELECT *
  FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::bigint[], $6::int[], $7::text[], $8::int[], $9::float8[], $10::float8[])
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
)
INSERT INTO webhook_attempts (id, endpoint_id, event_id, sequence, attempt, status_code, error, duration_ms, created_at)
SELECT id, endpoint_id, event_id, sequence, attempt, status_code, error, duration_ms, to_timestamp(began_ms / 1000.0)
FROM r, (SELECT set_config('synchronous_commit', 'off', true)) async_commit
