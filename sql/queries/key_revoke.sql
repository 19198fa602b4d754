-- A key's revocation in one statement, sent on its own so that it commits without a BEGIN or a
-- COMMIT message, in one round trip. The caller's key is checked and held first (every part waits
-- on `(SELECT ok FROM checked)`), then changes in flight made with the revoked key are waited for,
-- so that one checked after this began finds the key revoked. An expiry that passed unmarked is
-- recorded first (:system_origin, :system_ip_address). No row: no such key, or revoked already.
WITH checked AS MATERIALIZED (
  SELECT change_key_check(:checked_key, :project_id) AS ok
), held AS MATERIALIZED (
  SELECT hold_changes_of('key', :id, :project_id) WHERE (SELECT ok FROM checked)
), before AS (
  -- FOR UPDATE: a job marking the key expired meanwhile is waited for and seen, so the expiry is
  -- recorded once.
  SELECT k.id, CASE WHEN k.status = 'activated' AND k.expires_at <= now() THEN unix_seconds(k.expires_at) END AS expired_at
  FROM api_keys k, held
  WHERE k.id = :id AND k.project_id = :project_id AND k.status <> 'revoked' AND (SELECT ok FROM checked)
  FOR UPDATE OF k
), revoked AS (
  UPDATE api_keys k
  SET status = 'revoked', updated_at = now_seconds()
  FROM before b
  WHERE k.id = b.id AND k.project_id = :project_id
  RETURNING k.id, k.name, unix_seconds(k.updated_at) AS updated_at, b.expired_at
)
SELECT r.id
FROM checked
CROSS JOIN LATERAL (SELECT revoked.* FROM revoked WHERE checked.ok) r
CROSS JOIN LATERAL (
  SELECT count(*) AS events FROM (
    SELECT hand_over_event(v.id, :project_id, v.type, 'key', r.id, v.origin, v.actor, v.ip, v.details, v.at)
    FROM (VALUES
      (1, :expired_event_id::text, 'key.expired', :system_origin::text, NULL::text, :system_ip_address::text, jsonb_build_object('expires_at', r.expired_at), r.expired_at, r.expired_at IS NOT NULL),
      (2, :revoked_event_id::text, 'key.revoked', :origin::text, :actor_id::text, :ip_address::text, jsonb_build_object('name', r.name), r.updated_at, true)
    ) v (n, id, type, origin, actor, ip, details, at, happened)
    WHERE v.happened
    ORDER BY v.n
  ) events
) handed_over
