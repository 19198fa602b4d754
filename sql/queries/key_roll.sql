-- A key's roll in one statement (domain/key-roll.ts), ordered as key_revoke.sql is: the caller's
-- key checked and held, and with grace_s 0 (a revocation) the old key's changes in flight waited
-- for, before any row is locked or written. A refusal writes nothing: no row (no such key of the
-- project, or revoked), or the `refusal` it names.
-- $1 old key, $2 project, $3 the key to check (NULL: none), $4 grace_s, $5 new key's id, $6 its
-- consumer, $7 its secret's hash, $8 its preview, $9 the scopes the caller may grant, $10 the
-- calling key, $11 key.created's id, $12 key.rolled's id, $13 origin, $14 actor key, $15 ip,
-- $16 the calling key's rate limit (NULL: none).
WITH checked AS MATERIALIZED (
  SELECT change_key_check($3, $2) AS ok
), held AS MATERIALIZED (
  -- One row whether or not the hold was taken, so that `old` waits on it either way.
  SELECT count(*) AS n FROM (SELECT hold_changes_of('key', $1, $2) WHERE $4::int = 0 AND (SELECT ok FROM checked)) h
), old AS MATERIALIZED (
  SELECT k.id, k.project_id, k.name, k.scope, k.expires_at, k.rate_limit, key_status(k.status, k.expires_at) AS status
  FROM api_keys k
  -- The hold's row is waited on as a sub-select, not joined: Citus cannot copy such a join's rows
  -- into the new key's insert.
  WHERE k.id = $1 AND k.project_id = $2 AND k.status <> 'revoked' AND (SELECT ok FROM checked) AND (SELECT n FROM held) >= 0
  FOR UPDATE OF k
), decided AS MATERIALIZED (
  -- In this order; CASE stops at the first that holds. key_within_caller_life raises PMS06.
  SELECT o.*, CASE
    WHEN o.status = 'expired' THEN 'expired'
    WHEN NOT (o.scope <@ $9::text[]) THEN 'scope'
    WHEN rate_limit_looser(o.rate_limit, $16::jsonb) THEN 'rate_limit'
    WHEN key_within_caller_life($10, unix_seconds(o.expires_at), $2) THEN NULL
  END AS refusal,
  -- The old key's expiry after the roll, formed here: Citus takes no STABLE function (now_seconds)
  -- beside a column in an UPDATE's SET.
  least(o.expires_at, now_seconds() + make_interval(secs => $4::int)) AS rolled_expires_at
  FROM old o
), created AS (
  -- What the new key takes from the old one is the last line of each list.
  INSERT INTO api_keys (id, project_id, created_by, secret_hash, key_preview,
    name, scope, expires_at, rate_limit)
  SELECT $5, $2, $6, $7, $8,
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
  SET status = CASE WHEN $4::int = 0 THEN 'revoked' ELSE k.status END,
      expires_at = d.rolled_expires_at,
      updated_at = now_seconds()
  FROM decided d
  WHERE k.id = d.id AND k.project_id = $2 AND d.refusal IS NULL
)
SELECT d.refusal, c.*
FROM decided d
LEFT JOIN created c ON true
CROSS JOIN LATERAL (
  SELECT count(*) AS events FROM (
    SELECT hand_over_event(v.id, $2, v.type, 'key', v.related, $13, $14, $15, v.details, c.created_at)
    FROM (VALUES
      (1, $11::text, 'key.created', c.id, jsonb_build_object('rolled_from', d.id)),
      (2, $12::text, 'key.rolled', d.id, jsonb_build_object('replaced_by', c.id, 'grace_s', $4::int))
    ) v (n, id, type, related, details)
    WHERE c.id IS NOT NULL
    ORDER BY v.n
  ) events
) handed_over
