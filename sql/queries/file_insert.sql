INSERT INTO files (id, project_id, name, size_bytes, is_image, content)
VALUES (:id, :project_id, :name, :size_bytes, :is_image, :content)
RETURNING unix_seconds(created_at) AS created_at
