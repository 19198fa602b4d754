UPDATE projects SET status = 'disabled', updated_at = now_seconds()
WHERE id = $1 AND status = 'active'
RETURNING id, unix_seconds(updated_at) AS updated_at
