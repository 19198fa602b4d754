UPDATE apps SET logo_file_id = $2, updated_at = now_seconds()
WHERE id = $1 AND project_id = $3 AND deleted_at IS NULL
RETURNING unix_seconds(updated_at) AS updated_at
