-- A key created by the API in one statement (domain/keys.ts createKey, through
-- domain/services.ts changeByStatement): sent on its own, it commits without a BEGIN or a COMMIT
-- message, in one round trip. The key as sql/queries/key_insert.sql inserts it ($1..$8), the
-- caller's key ($9) checked and held by that insert before its row is formed (a refusal fails
-- the statement), then the key's key.created handed over (hand_over_event).
-- $10 the actor's key, $11 the event's id, $12 its origin, $13 its ip address, $14 its details.
WITH created AS (
{{insert}}
)
SELECT k.*
FROM created k,
  LATERAL (SELECT hand_over_event($11, $2, 'key.created', 'key', k.id, $12, $10, $13, $14, k.created_at)) handed_over
