INSERT INTO memberships (project_id, consumer_id, role) VALUES ($1, $2, $3)
