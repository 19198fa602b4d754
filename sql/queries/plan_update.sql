-- Returns the plan before and after, for the event's details. $4 is the new default rate limit
-- of the project's new keys, set only when $5 (NULL is a value: none).
WITH before AS (SELECT * FROM plans WHERE project_id = $1 FOR UPDATE)
UPDATE plans p
SET custom_apps = coalesce($2, p.custom_apps),
    app_limit = coalesce($3, p.app_limit),
    rate_limit = CASE WHEN $5::boolean THEN $4::jsonb ELSE p.rate_limit END,
    updated_at = now_seconds()
FROM before b
WHERE p.project_id = b.project_id
RETURNING b.custom_apps AS old_custom_apps, b.app_limit AS old_app_limit, b.rate_limit AS old_rate_limit,
          p.custom_apps, p.app_limit, p.rate_limit, unix_seconds(p.updated_at) AS updated_at
