SELECT coalesce((SELECT keys FROM project_counts WHERE project_id = $1), 0) AS total
