SELECT coalesce((SELECT total FROM project_event_counts WHERE project_id = $1), 0) AS total
