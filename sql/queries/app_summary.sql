SELECT id, name, description, type, status, model_id, model_build_id,
       unix_seconds(created_at) AS created_at, unix_seconds(updated_at) AS updated_at
FROM apps
WHERE id = $1 AND project_id = $2
