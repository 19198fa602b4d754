INSERT INTO apps (id, project_id, name, description, category, type, status, model_id, model_build_id)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
RETURNING unix_seconds(created_at) AS created_at
