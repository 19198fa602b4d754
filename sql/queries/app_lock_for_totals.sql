-- Serializes totals recomputes of one app: the recompute that follows takes its snapshot after
-- the lock, so it sees every totals row committed before it. $2: the app's own project.
SELECT id FROM apps WHERE id = $1 AND project_id = $2 FOR UPDATE
