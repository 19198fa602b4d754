-- The project's own app, locked for a change; the logo's kind decides whether it may be published.
SELECT a.id, a.name, a.description, a.type, a.status, a.logo_file_id,
       coalesce(f.is_image, false) AS has_image_logo
FROM apps a
LEFT JOIN files f ON f.id = a.logo_file_id
WHERE a.id = $1 AND a.project_id = $2 AND a.deleted_at IS NULL
FOR UPDATE OF a
