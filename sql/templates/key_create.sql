-- A key created by the API in one statement, sent on its own so that it commits without a BEGIN
-- or a COMMIT message, in one round trip: key_insert.sql (which checks and holds the caller's key
-- before its row is formed; a refusal fails the statement), then the key's key.created handed over.
WITH created AS (
{{insert}}
)
SELECT k.*
FROM created k,
  LATERAL (SELECT hand_over_event(:event_id, :project_id, 'key.created', 'key', k.id, :origin, :actor_id, :ip_address, :details, k.created_at)) handed_over
-- The caller's expiry as stored: the one a web process remembers may predate a roll.
WHERE key_within_caller_life(:checked_key, k.expires_at, :project_id)
