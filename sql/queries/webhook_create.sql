-- A webhook endpoint created in one statement (domain/webhooks.ts createWebhook): the caller's key
-- checked and held first (change_key_check, sql/migrations/0017), then the endpoint, which looks at
-- the events written from now on (its project's head so far is where it starts), then
-- webhook.created handed over.
-- :secret is sealed; :checked_key the key to check (NULL: none); :event_id, :origin, :actor_id,
-- :ip_address and :details the event's.
-- The head is read apart: on Citus the endpoints are the coordinator's (docs/citus.md).
WITH head AS MATERIALIZED (
  SELECT coalesce((SELECT c.total FROM project_event_counts c WHERE c.project_id = :project_id), 0) AS total
), created AS (
  INSERT INTO webhook_endpoints (id, project_id, url, description, types, secret, fanned_out)
  SELECT :id, :project_id, :url, :description, :types, :secret, h.total
  FROM head h
  WHERE change_key_check(:checked_key, :project_id)
  RETURNING id, url, description, types, status, disabled_reason, unix_seconds(created_at) AS created_at, unix_seconds(updated_at) AS updated_at
)
SELECT w.*
FROM created w,
  LATERAL (SELECT hand_over_event(:event_id, :project_id, 'webhook.created', 'webhook', w.id, :origin, :actor_id, :ip_address, :details, w.created_at)) handed_over
