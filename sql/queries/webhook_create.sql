-- A webhook endpoint created in one statement (domain/webhooks.ts createWebhook): the caller's key
-- checked and held first (change_key_check, sql/migrations/0017), then the endpoint, which looks at
-- the events written from now on (its project's head so far is where it starts), then
-- webhook.created handed over.
-- $1 id, $2 project, $3 url, $4 description, $5 types, $6 secret, $7 the key to check (NULL: none),
-- $8 the event's id, $9 its origin, $10 the actor's key, $11 its ip address, $12 its details.
-- The head is read apart: on Citus the endpoints are the coordinator's (docs/citus.md).
WITH head AS MATERIALIZED (
  SELECT coalesce((SELECT c.total FROM project_event_counts c WHERE c.project_id = $2), 0) AS total
), created AS (
  INSERT INTO webhook_endpoints (id, project_id, url, description, types, secret, fanned_out)
  SELECT $1, $2, $3, $4, $5, $6, h.total
  FROM head h
  WHERE change_key_check($7, $2)
  RETURNING id, url, description, types, status, disabled_reason, unix_seconds(created_at) AS created_at, unix_seconds(updated_at) AS updated_at
)
SELECT w.*
FROM created w,
  LATERAL (SELECT hand_over_event($8, $2, 'webhook.created', 'webhook', w.id, $9, $10, $11, $12, w.created_at)) handed_over
