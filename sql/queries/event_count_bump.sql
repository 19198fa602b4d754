INSERT INTO project_event_counts (project_id, total) VALUES ($1, 1)
ON CONFLICT (project_id) DO UPDATE SET total = project_event_counts.total + 1
