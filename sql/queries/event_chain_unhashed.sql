-- Projects with events written before the hash chain existed.
SELECT DISTINCT project_id FROM events WHERE hash IS NULL
