INSERT INTO files (id, project_id, name, size_bytes, is_image, content)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING unix_seconds(created_at) AS created_at
