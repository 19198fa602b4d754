-- The consumer a workspace-made key is created by: the project's owner (its first, should it have
-- several), with the project's and the owner's status. Both rows are held (FOR SHARE) so that a
-- disable committing meanwhile waits for the key, or is seen by it.
SELECT m.consumer_id, p.status AS project_status, c.status AS consumer_status
FROM memberships m
JOIN projects p ON p.id = m.project_id
JOIN consumers c ON c.id = m.consumer_id
WHERE m.project_id = $1 AND m.role = 'owner'
ORDER BY m.created_at, m.consumer_id
LIMIT 1
FOR SHARE OF p, c
