-- Workspace commands address an app by id alone; a deleted app is not found.
SELECT id, project_id, status, logo_file_id FROM apps WHERE id = $1 AND deleted_at IS NULL
