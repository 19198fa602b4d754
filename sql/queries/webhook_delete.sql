-- An endpoint's deletion (soft: deleted_at) in one statement (domain/webhooks.ts deleteWebhook):
-- the caller's key checked and held first (change_key_check, sql/migrations/0017), the project's
-- endpoint marked deleted and what was owed to it dropped, then webhook.deleted handed over.
-- No row: no such endpoint of the project.
-- :checked_key is the key to check (NULL: none); :event_id, :origin, :actor_id and :ip_address
-- the event's.
WITH checked AS MATERIALIZED (
  SELECT change_key_check(:checked_key, :project_id) AS ok
), deleted AS (
  UPDATE webhook_endpoints SET deleted_at = now_seconds(), updated_at = now_seconds(), replay_from = NULL, replay_to = NULL
  WHERE id = :id AND project_id = :project_id AND deleted_at IS NULL AND (SELECT ok FROM checked)
  RETURNING id, url, unix_seconds(deleted_at) AS deleted_at
), dropped AS (
  DELETE FROM webhook_deliveries d USING deleted w WHERE d.endpoint_id = w.id
)
SELECT d.id
FROM checked,
  LATERAL (SELECT deleted.* FROM deleted WHERE checked.ok) d,
  LATERAL (SELECT hand_over_event(:event_id, :project_id, 'webhook.deleted', 'webhook', d.id, :origin, :actor_id, :ip_address, jsonb_build_object('url', d.url), d.deleted_at)) handed_over
