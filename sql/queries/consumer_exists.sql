SELECT id, status FROM consumers WHERE id = $1
