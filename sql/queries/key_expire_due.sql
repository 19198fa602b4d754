-- Keys whose expiry has passed, marked in one statement; SKIP LOCKED lets two workers share it.
-- The change is the key's expiry, whenever the job comes to it: updated_at is expires_at, and so is
-- the event's time (decisions.md: the time of the change, not of the job). The statement is
-- expire_due_keys's (sql/migrations/0045), which Citus gets in a form of its own (docs/citus.md).
SELECT id, project_id, expires_at FROM expire_due_keys($1)
