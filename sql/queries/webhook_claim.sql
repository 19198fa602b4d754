-- Claims due deliveries for attempts, run under webhook_claim_lock so that the leases it counts
-- are all there are: at most $1 in all, and per enabled endpoint no more than leaves $2 leases in
-- flight over every worker. A claim numbers its attempt and leases the delivery for $3 seconds:
-- `next_at` moves to the lease's end, so a worker that dies mid-attempt hands it on then.
WITH open AS MATERIALIZED (
  SELECT e.id, e.url, e.secret, CASE WHEN e.previous_secret_until > now() THEN e.previous_secret END AS previous_secret,
         $2::int - (SELECT count(*) FROM webhook_deliveries l WHERE l.endpoint_id = e.id AND l.leased_until > now())::int AS free
  FROM webhook_endpoints e
  WHERE e.status = 'enabled' AND e.deleted_at IS NULL
), picked AS (
  SELECT o.id AS endpoint_id, d.event_id, d.next_at
  FROM open o
  CROSS JOIN LATERAL (
    SELECT d.event_id, d.next_at FROM webhook_deliveries d
    WHERE d.endpoint_id = o.id AND d.next_at <= now()
    ORDER BY d.next_at
    LIMIT greatest(o.free, 0)
  ) d
  ORDER BY d.next_at
  LIMIT $1
), claimed AS (
  UPDATE webhook_deliveries d
  SET attempts = d.attempts + 1, leased_until = now() + make_interval(secs => $3), next_at = now() + make_interval(secs => $3)
  FROM picked p
  WHERE d.endpoint_id = p.endpoint_id AND d.event_id = p.event_id AND d.next_at <= now()
  RETURNING d.endpoint_id, d.event_id, d.sequence, d.attempts
)
SELECT c.endpoint_id, c.event_id, c.sequence, c.attempts, o.url, o.secret, o.previous_secret,
       ev.body, t.name AS type, unix_seconds(ev.created_at) AS created_at
FROM claimed c
JOIN open o ON o.id = c.endpoint_id
JOIN events ev ON ev.id = c.event_id
JOIN event_types t ON t.id = ev.type_id
