-- Projects with events written before the hash chain existed, or before events kept their JSON.
SELECT DISTINCT project_id FROM events WHERE hash IS NULL OR body IS NULL
