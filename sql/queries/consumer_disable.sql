-- Returns one row per project the consumer belongs to, each of which records the event.
WITH disabled AS (
  UPDATE consumers SET status = 'disabled', updated_at = now_seconds()
  WHERE id = $1 AND status = 'active'
  RETURNING id, updated_at
)
SELECT d.id, m.project_id, unix_seconds(d.updated_at) AS updated_at
FROM disabled d
JOIN memberships m ON m.consumer_id = d.id
