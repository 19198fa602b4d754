-- Serializes totals recomputes of one app: the recompute that follows takes its snapshot after
-- the lock, so it sees every totals row committed before it.
SELECT id FROM apps WHERE id = $1 FOR UPDATE
