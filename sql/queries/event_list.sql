SELECT id, type_id, type_name, related_table, related_id, origin, ip_address, details, created_at
FROM event_view
WHERE project_id = $1
ORDER BY created_ts DESC, id DESC
LIMIT $2
