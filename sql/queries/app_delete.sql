UPDATE apps SET deleted_at = now_seconds(), updated_at = now_seconds()
WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL
RETURNING id, name, unix_seconds(deleted_at) AS deleted_at
