UPDATE project_event_counts SET last_hash = $2 WHERE project_id = $1
