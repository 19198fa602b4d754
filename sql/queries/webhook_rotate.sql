-- An endpoint's secret rotated in one statement (domain/webhooks.ts rotateWebhookSecret): the
-- caller's key checked and held first (change_key_check, sql/migrations/0017), the new secret
-- kept, the one it replaces signed with beside it for 24 hours more, then webhook.secret_rotated
-- handed over (neither secret in it). No row: no such endpoint of the project.
-- $1 endpoint, $2 project, $3 the new secret, $4 the key to check (NULL: none), $5 the event's id,
-- $6 its origin, $7 the actor's key, $8 its ip address.
WITH checked AS MATERIALIZED (
  SELECT change_key_check($4, $2) AS ok
), rotated AS (
  UPDATE webhook_endpoints
  SET previous_secret = secret, previous_secret_until = now() + interval '24 hours', secret = $3, updated_at = now_seconds()
  WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL AND (SELECT ok FROM checked)
  RETURNING id, url, description, types, status, disabled_reason, unix_seconds(created_at) AS created_at,
            unix_seconds(updated_at) AS updated_at, unix_seconds(previous_secret_until) AS previous_until
)
SELECT r.id, r.url, r.description, r.types, r.status, r.disabled_reason, r.created_at, r.updated_at
FROM checked,
  LATERAL (SELECT rotated.* FROM rotated WHERE checked.ok) r,
  LATERAL (SELECT hand_over_event($5, $2, 'webhook.secret_rotated', 'webhook', r.id, $6, $7, $8,
    jsonb_build_object('previous_secret_expires_at', r.previous_until), r.updated_at)) handed_over
