-- A key created by the API in one statement, committing in one round trip: key_insert.sql
-- ($1..$8, the caller's key $9 checked and held first), then key.created handed over.
-- $10 the actor's key, $11 the event's id, $12 its origin, $13 its ip address, $14 its details.
WITH created AS (
{{insert}}
)
SELECT k.*
FROM created k,
  LATERAL (SELECT hand_over_event($11, $2, 'key.created', 'key', k.id, $12, $10, $13, $14, k.created_at)) handed_over
-- The caller's expiry as stored: the one a web process remembers may predate a roll (0021).
WHERE key_within_caller_life($9, k.expires_at)
