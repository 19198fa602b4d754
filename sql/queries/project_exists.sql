SELECT id, status FROM projects WHERE id = $1
