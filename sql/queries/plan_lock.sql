-- Locks the project's plan row for the creating transaction, so two creations racing at the
-- limit cannot both pass; the count is of apps not deleted.
SELECT p.custom_apps, p.app_limit,
       (SELECT count(*) FROM apps a WHERE a.project_id = p.project_id AND a.deleted_at IS NULL) AS app_count
FROM plans p
WHERE p.project_id = $1
FOR UPDATE
