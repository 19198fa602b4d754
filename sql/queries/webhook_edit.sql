-- An endpoint's edit (PATCH) in one statement (domain/webhooks.ts updateWebhook): the caller's key
-- checked and held first (change_key_check, sql/migrations/0017), the project's endpoint locked,
-- the edit unless it changes nothing, then webhook.updated handed over with what changed.
-- Disabling drops what was owed to the endpoint; enabling it again starts from the events written
-- from then on (a replay sends those in between). No row: no such endpoint of the project.
-- :url, :description, :types, :status are NULL when not sent; :checked_key the key to check (NULL:
-- none); :event_id, :origin, :actor_id and :ip_address the event's.
WITH checked AS MATERIALIZED (
  SELECT change_key_check(:checked_key, :project_id) AS ok
), head AS MATERIALIZED (
  -- Read apart: on Citus the endpoints are the coordinator's, the head a shard's (docs/citus.md).
  SELECT coalesce((SELECT c.total FROM project_event_counts c WHERE c.project_id = :project_id), 0) AS total
), old AS MATERIALIZED (
  SELECT w.id, w.url, w.description, w.types, w.status, w.disabled_reason, unix_seconds(w.created_at) AS created_at,
         unix_seconds(w.updated_at) AS updated_at,
         coalesce(:url, w.url) AS new_url, coalesce(:description, w.description) AS new_description,
         coalesce(:types::text[], w.types) AS new_types, coalesce(:status, w.status) AS new_status
  FROM webhook_endpoints w
  WHERE (SELECT ok FROM checked) AND w.id = :id AND w.project_id = :project_id AND w.deleted_at IS NULL
  FOR UPDATE OF w
), edited AS (
  UPDATE webhook_endpoints w
  SET url = o.new_url, description = o.new_description, types = o.new_types, status = o.new_status,
      disabled_reason = CASE WHEN o.new_status = o.status THEN w.disabled_reason WHEN o.new_status = 'disabled' THEN 'manual' END,
      fanned_out = CASE WHEN o.new_status = 'enabled' AND o.status = 'disabled'
                        THEN (SELECT total FROM head)
                        ELSE w.fanned_out END,
      replay_from = CASE WHEN o.new_status = 'disabled' THEN NULL ELSE w.replay_from END,
      replay_to = CASE WHEN o.new_status = 'disabled' THEN NULL ELSE w.replay_to END,
      failing_since = CASE WHEN o.new_status = o.status THEN w.failing_since END,
      updated_at = now_seconds()
  FROM old o
  WHERE w.id = o.id
    AND (o.new_url <> o.url OR o.new_description <> o.description OR o.new_types <> o.types OR o.new_status <> o.status)
  RETURNING w.id, w.status, w.disabled_reason, unix_seconds(w.updated_at) AS updated_at
), dropped AS (
  DELETE FROM webhook_deliveries d
  USING edited e
  WHERE d.endpoint_id = e.id AND e.status = 'disabled'
)
SELECT o.id, o.new_url AS url, o.new_description AS description, o.new_types AS types, o.new_status AS status,
       CASE WHEN e.id IS NULL THEN o.disabled_reason ELSE e.disabled_reason END AS disabled_reason,
       o.created_at, coalesce(e.updated_at, o.updated_at) AS updated_at
FROM old o
LEFT JOIN LATERAL (SELECT edited.* FROM edited WHERE edited.id = o.id) e ON true
CROSS JOIN LATERAL (
  SELECT count(*) AS events FROM (
    SELECT hand_over_event(:event_id, :project_id, 'webhook.updated', 'webhook', e.id, :origin, :actor_id, :ip_address,
      jsonb_build_object('changes', jsonb_strip_nulls(jsonb_build_object(
        'url', CASE WHEN o.new_url <> o.url THEN jsonb_build_object('from', o.url, 'to', o.new_url) END,
        'description', CASE WHEN o.new_description <> o.description THEN jsonb_build_object('from', o.description, 'to', o.new_description) END,
        'types', CASE WHEN o.new_types <> o.types THEN jsonb_build_object('from', to_jsonb(o.types), 'to', to_jsonb(o.new_types)) END,
        'status', CASE WHEN o.new_status <> o.status THEN jsonb_build_object('from', o.status, 'to', o.new_status) END))),
      e.updated_at)
    WHERE e.id IS NOT NULL
  ) events
) handed_over
