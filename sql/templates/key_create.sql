-- A key created by the API in one statement (domain/keys.ts createKey, through
-- domain/services.ts changeByStatement): sent on its own, it commits without a BEGIN or a COMMIT
-- message, in one round trip. First the caller's key is checked and held (change_key_check,
-- sql/migrations/0017; a refusal fails the statement), then the key is inserted as
-- sql/queries/key_insert.sql inserts it ($1..$8), then its key.created is handed over
-- (hand_over_event). Each LATERAL reads the one before it, so the only plan runs them in that
-- order: the key and its owners are held before any row is written or locked, as a change's
-- BEGIN holds them (sql/migrations/0014).
-- $9 the key to check (NULL: none), $10 the actor's key, $11 the event's id, $12 its origin,
-- $13 its ip address, $14 its details.
WITH created AS (
{{insert}}
), checked AS MATERIALIZED (
  SELECT change_key_check($9) AS ok
)
SELECT k.*
FROM checked,
  LATERAL (SELECT created.* FROM created WHERE checked.ok) k,
  LATERAL (SELECT hand_over_event($11, $2, 'key.created', 'key', k.id, $12, $10, $13, $14, k.created_at)) handed_over
