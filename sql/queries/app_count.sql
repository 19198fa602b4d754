SELECT count(*) AS total FROM apps WHERE project_id = $1 AND deleted_at IS NULL
