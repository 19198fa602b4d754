-- Waits for the changes in flight made with the key (hold_changes_of, sql/migrations/0014); a
-- change checked after this began waits for its end, then finds the key revoked.
WITH held AS (SELECT hold_changes_of('key', $1))
UPDATE api_keys
SET status = 'revoked', updated_at = now_seconds()
FROM held
WHERE id = $1 AND project_id = $2 AND status <> 'revoked'
RETURNING id, name, unix_seconds(updated_at) AS updated_at
