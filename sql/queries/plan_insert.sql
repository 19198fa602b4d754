INSERT INTO plans (project_id) VALUES ($1)
