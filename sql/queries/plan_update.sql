-- Returns the plan before and after, for the event's details.
WITH before AS (SELECT * FROM plans WHERE project_id = $1 FOR UPDATE)
UPDATE plans p
SET custom_apps = coalesce($2, p.custom_apps),
    app_limit = coalesce($3, p.app_limit),
    updated_at = now_seconds()
FROM before b
WHERE p.project_id = b.project_id
RETURNING b.custom_apps AS old_custom_apps, b.app_limit AS old_app_limit,
          p.custom_apps, p.app_limit, unix_seconds(p.updated_at) AS updated_at
