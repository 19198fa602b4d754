UPDATE apps SET status = 'activated', updated_at = now_seconds()
WHERE id = $1 AND project_id = $2 AND status = 'draft' AND deleted_at IS NULL
RETURNING id, project_id, unix_seconds(updated_at) AS updated_at
