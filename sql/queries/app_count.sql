SELECT coalesce((SELECT sum(apps) FROM project_counts WHERE project_id = $1), 0)::bigint AS total
