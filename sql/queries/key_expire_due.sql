-- Keys whose expiry has passed, marked in one statement; SKIP LOCKED lets two workers share it.
-- The change is the key's expiry, whenever the job comes to it: updated_at is expires_at, and so is
-- the event's time (decisions.md: the time of the change, not of the job).
UPDATE api_keys k
SET status = 'expired', updated_at = k.expires_at
FROM (
  SELECT id FROM api_keys
  WHERE status = 'activated' AND expires_at IS NOT NULL AND expires_at <= now()
  ORDER BY expires_at
  LIMIT $1
  FOR UPDATE SKIP LOCKED
) due
WHERE k.id = due.id
RETURNING k.id, k.project_id, unix_seconds(k.expires_at) AS expires_at
