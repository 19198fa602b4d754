-- An app a workspace command changes, locked for the change: a command running at the same time (or
-- the app's deletion) waits, then reads what it left. A deleted app is not found. By its project
-- too (app_find_any's), as Citus locks a row only where it knows the shard.
SELECT id, project_id, status, logo_file_id FROM apps WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL
FOR UPDATE
