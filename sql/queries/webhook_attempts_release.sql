-- Attempts a stopping worker gave up before they ended: their deliveries due again at once, the
-- attempt not counted. $1 endpoints, $2 events, $3 the attempt numbers claimed.
UPDATE webhook_deliveries d
SET attempts = d.attempts - 1, leased_until = NULL, next_at = now()
FROM unnest($1::text[], $2::text[], $3::int[]) AS r (endpoint_id, event_id, attempt)
WHERE d.endpoint_id = r.endpoint_id AND d.event_id = r.event_id AND d.attempts = r.attempt
