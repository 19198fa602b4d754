-- A key's revocation in one statement (domain/keys.ts revokeKey, through domain/services.ts
-- changeByStatement): sent on its own, it commits without a BEGIN or a COMMIT message, in one
-- round trip. In order: the caller's key checked and held
-- (change_key_check, sql/migrations/0017; a refusal fails the statement); then the changes in
-- flight made with the revoked key waited for (hold_changes_of, sql/migrations/0014), so that a
-- change checked after this began waits for its end, then finds the key revoked; then the key
-- revoked; then its events handed over (hand_over_event), in the order listed. A key whose expiry
-- passed before the expiry job marked it has that expiry recorded first (dated then, by the
-- service itself), or the trail would never hold it. The row is read FOR UPDATE so that a job
-- marking it meanwhile is waited for and seen, and the expiry recorded once. No row: no such
-- key of the project, or revoked already.
-- Every part that locks or writes a row waits on `(SELECT ok FROM checked)`: a sub-select of no
-- column, run once before the scan beneath it starts, whatever order the planner picks, and run
-- always, since a data-modifying part always runs. So the key is checked and held before any row
-- is locked or written, and checked even when the change finds nothing (a joined order or a
-- LATERAL is the planner's to rearrange: test/keys/change-order.test.ts).
-- $1 key, $2 project, $3 the key to check (NULL: none), $4 key.expired's id, $5 key.revoked's
-- id, $6 its origin, $7 the actor's key, $8 its ip address, $9 and $10 the service's own origin
-- and ip address (key.expired's).
WITH checked AS MATERIALIZED (
  SELECT change_key_check($3) AS ok
), held AS MATERIALIZED (
  SELECT hold_changes_of('key', $1) WHERE (SELECT ok FROM checked)
), before AS (
  SELECT k.id, k.status, k.expires_at
  FROM api_keys k, held
  WHERE k.id = $1 AND k.project_id = $2 AND k.status <> 'revoked' AND (SELECT ok FROM checked)
  FOR UPDATE OF k
), revoked AS (
  UPDATE api_keys k
  SET status = 'revoked', updated_at = now_seconds()
  FROM before b
  WHERE k.id = b.id
  RETURNING k.id, k.name, unix_seconds(k.updated_at) AS updated_at,
    CASE WHEN b.status = 'activated' AND b.expires_at <= now() THEN unix_seconds(b.expires_at) END AS expired_at
)
SELECT r.id
FROM checked
CROSS JOIN LATERAL (SELECT revoked.* FROM revoked WHERE checked.ok) r
CROSS JOIN LATERAL (
  SELECT count(*) AS events FROM (
    SELECT hand_over_event(v.id, $2, v.type, 'key', r.id, v.origin, v.actor, v.ip, v.details, v.at)
    FROM (VALUES
      (1, $4::text, 'key.expired', $9::text, NULL::text, $10::text, jsonb_build_object('expires_at', r.expired_at), r.expired_at, r.expired_at IS NOT NULL),
      (2, $5::text, 'key.revoked', $6::text, $7::text, $8::text, jsonb_build_object('name', r.name), r.updated_at, true)
    ) v (n, id, type, origin, actor, ip, details, at, happened)
    WHERE v.happened
    ORDER BY v.n
  ) events
) handed_over
