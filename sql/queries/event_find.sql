SELECT body FROM events WHERE id = $1 AND project_id = $2
