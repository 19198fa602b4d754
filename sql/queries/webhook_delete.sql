-- An endpoint's deletion (soft: deleted_at) in one statement (domain/webhooks.ts deleteWebhook):
-- the caller's key checked and held first (change_key_check, sql/migrations/0017), the project's
-- endpoint marked deleted and what was owed to it dropped, then webhook.deleted handed over.
-- No row: no such endpoint of the project.
-- $1 endpoint, $2 project, $3 the key to check (NULL: none), $4 the event's id, $5 its origin,
-- $6 the actor's key, $7 its ip address.
WITH checked AS MATERIALIZED (
  SELECT change_key_check($3, $2) AS ok
), deleted AS (
  UPDATE webhook_endpoints SET deleted_at = now_seconds(), updated_at = now_seconds(), replay_from = NULL, replay_to = NULL
  WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL AND (SELECT ok FROM checked)
  RETURNING id, url, unix_seconds(deleted_at) AS deleted_at
), dropped AS (
  DELETE FROM webhook_deliveries d USING deleted w WHERE d.endpoint_id = w.id
)
SELECT d.id
FROM checked,
  LATERAL (SELECT deleted.* FROM deleted WHERE checked.ok) d,
  LATERAL (SELECT hand_over_event($4, $2, 'webhook.deleted', 'webhook', d.id, $5, $6, $7, jsonb_build_object('url', d.url), d.deleted_at)) handed_over
