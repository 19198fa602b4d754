-- The consumer a workspace-made key is created by: the project's owner (its first, should it have several).
SELECT consumer_id FROM memberships WHERE project_id = $1 AND role = 'owner' ORDER BY created_at, consumer_id LIMIT 1
