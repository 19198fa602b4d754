-- An endpoint's secret rotated in one statement (domain/webhooks.ts rotateWebhookSecret): the
-- caller's key checked and held first (change_key_check, sql/migrations/0017), the new secret
-- kept, the one it replaces signed with beside it for 24 hours more, then webhook.secret_rotated
-- handed over (neither secret in it). No row: no such endpoint of the project.
-- :secret is the new one, sealed; :checked_key the key to check (NULL: none); :event_id, :origin,
-- :actor_id and :ip_address the event's.
WITH checked AS MATERIALIZED (
  SELECT change_key_check(:checked_key, :project_id) AS ok
), rotated AS (
  UPDATE webhook_endpoints
  SET previous_secret = secret, previous_secret_until = now() + interval '24 hours', secret = :secret, updated_at = now_seconds()
  WHERE id = :id AND project_id = :project_id AND deleted_at IS NULL AND (SELECT ok FROM checked)
  RETURNING id, url, description, types, status, disabled_reason, unix_seconds(created_at) AS created_at,
            unix_seconds(updated_at) AS updated_at, unix_seconds(previous_secret_until) AS previous_until
)
SELECT r.id, r.url, r.description, r.types, r.status, r.disabled_reason, r.created_at, r.updated_at
FROM checked,
  LATERAL (SELECT rotated.* FROM rotated WHERE checked.ok) r,
  LATERAL (SELECT hand_over_event(:event_id, :project_id, 'webhook.secret_rotated', 'webhook', r.id, :origin, :actor_id, :ip_address,
    jsonb_build_object('previous_secret_expires_at', r.previous_until), r.updated_at)) handed_over
