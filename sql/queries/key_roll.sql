-- A key's roll in one statement (domain/key-roll.ts), ordered as key_revoke.sql is: the caller's
-- key checked and held, and with grace_s 0 (a revocation) the old key's changes in flight waited
-- for, before any row is locked or written. A refusal writes nothing: no row (no such key of the
-- project, or revoked), or the `refusal` it names.
-- :id is the key rolled; :checked_key the key to check (NULL: none); :new_id, :created_by,
-- :secret_hash and :key_preview are the new key's; :grantable the scopes the caller may grant;
-- :caller_key_id and :caller_rate_limit (NULL: none) the calling key's.
WITH checked AS MATERIALIZED (
  SELECT change_key_check(:checked_key, :project_id) AS ok
), held AS MATERIALIZED (
  -- One row whether or not the hold was taken, so that `old` waits on it either way.
  SELECT count(*) AS n FROM (SELECT hold_changes_of('key', :id, :project_id) WHERE :grace_s::int = 0 AND (SELECT ok FROM checked)) h
), old AS MATERIALIZED (
  SELECT k.id, k.project_id, k.name, k.scope, k.expires_at, k.rate_limit, key_status(k.status, k.expires_at) AS status
  FROM api_keys k
  -- The hold's row is waited on as a sub-select, not joined: Citus cannot copy such a join's rows
  -- into the new key's insert.
  WHERE k.id = :id AND k.project_id = :project_id AND k.status <> 'revoked' AND (SELECT ok FROM checked) AND (SELECT n FROM held) >= 0
  FOR UPDATE OF k
), decided AS MATERIALIZED (
  -- In this order; CASE stops at the first that holds. key_within_caller_life raises PMS06.
  SELECT o.*, CASE
    WHEN o.status = 'expired' THEN 'expired'
    WHEN NOT (o.scope <@ :grantable::text[]) THEN 'scope'
    WHEN rate_limit_looser(o.rate_limit, :caller_rate_limit::jsonb) THEN 'rate_limit'
    WHEN key_within_caller_life(:caller_key_id, unix_seconds(o.expires_at), :project_id) THEN NULL
  END AS refusal,
  -- The old key's expiry after the roll, formed here: Citus takes no STABLE function (now_seconds)
  -- beside a column in an UPDATE's SET.
  least(o.expires_at, now_seconds() + make_interval(secs => :grace_s::int)) AS rolled_expires_at
  FROM old o
), created AS (
  -- What the new key takes from the old one is the last line of each list.
  INSERT INTO api_keys (id, project_id, created_by, secret_hash, key_preview,
    name, scope, expires_at, rate_limit)
  SELECT :new_id, :project_id, :created_by, :secret_hash, :key_preview,
    d.name, d.scope, d.expires_at, d.rate_limit
  FROM decided d
  WHERE d.refusal IS NULL
  RETURNING id, name, key_preview, scope, key_status(status, expires_at) AS status,
            unix_seconds(expires_at) AS expires_at, unix_seconds(last_used_at) AS last_used_at,
            created_by, unix_seconds(created_at) AS created_at, unix_seconds(updated_at) AS updated_at, rate_limit
), rolled AS (
  UPDATE api_keys k
  -- decisions.md: expires_at becomes the earlier of its own and now + grace_s, for grace_s 0 too
  -- (then now), and with grace_s 0 the key is also revoked.
  SET status = CASE WHEN :grace_s::int = 0 THEN 'revoked' ELSE k.status END,
      expires_at = d.rolled_expires_at,
      updated_at = now_seconds()
  FROM decided d
  WHERE k.id = d.id AND k.project_id = :project_id AND d.refusal IS NULL
)
SELECT d.refusal, c.*
FROM decided d
LEFT JOIN created c ON true
CROSS JOIN LATERAL (
  SELECT count(*) AS events FROM (
    SELECT hand_over_event(v.id, :project_id, v.type, 'key', v.related, :origin, :actor_id, :ip_address, v.details, c.created_at)
    FROM (VALUES
      (1, :created_event_id::text, 'key.created', c.id, jsonb_build_object('rolled_from', d.id)),
      (2, :rolled_event_id::text, 'key.rolled', d.id, jsonb_build_object('replaced_by', c.id, 'grace_s', :grace_s::int))
    ) v (n, id, type, related, details)
    WHERE c.id IS NOT NULL
    ORDER BY v.n
  ) events
) handed_over
