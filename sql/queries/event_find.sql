SELECT id, type_id, type_name, related_table, related_id, origin, ip_address, details, created_at, sequence, actor_id, hash
FROM event_view
WHERE id = $1 AND project_id = $2
