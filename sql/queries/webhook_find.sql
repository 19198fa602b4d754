-- Rides a lane: one endpoint of the project.
SELECT id, url, description, types, status, disabled_reason, unix_seconds(created_at) AS created_at, unix_seconds(updated_at) AS updated_at
FROM webhook_endpoints
WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL
