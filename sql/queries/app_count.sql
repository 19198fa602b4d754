SELECT coalesce((SELECT apps FROM project_counts WHERE project_id = $1), 0) AS total
