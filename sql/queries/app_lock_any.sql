-- An app a workspace command changes, by id alone, locked for the change: a command running at the
-- same time (or the app's deletion) waits, then reads what it left. A deleted app is not found.
SELECT id, project_id, status, logo_file_id FROM apps WHERE id = $1 AND deleted_at IS NULL
FOR UPDATE
