-- Waits for the changes in flight made with the key (hold_changes_of, sql/migrations/0014); a
-- change checked after this began waits for its end, then finds the key revoked. A key whose
-- expiry passed before the expiry job marked it returns that second (expired_at): its expiry is
-- recorded with the revocation, or the trail would never hold it. The row is read FOR UPDATE so
-- that a job marking it meanwhile is waited for and seen, and the expiry recorded once.
WITH held AS (SELECT hold_changes_of('key', $1)),
before AS (
  SELECT k.id, k.status, k.expires_at
  FROM api_keys k, held
  WHERE k.id = $1 AND k.project_id = $2 AND k.status <> 'revoked'
  FOR UPDATE OF k
)
UPDATE api_keys k
SET status = 'revoked', updated_at = now_seconds()
FROM before b
WHERE k.id = b.id
RETURNING k.id, k.name, unix_seconds(k.updated_at) AS updated_at,
  CASE WHEN b.status = 'activated' AND b.expires_at <= now() THEN unix_seconds(b.expires_at) END AS expired_at
