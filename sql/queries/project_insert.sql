INSERT INTO projects (id, name) VALUES ($1, $2)
RETURNING id, unix_seconds(created_at) AS created_at
