-- The oldest $1 handed-over events, removed as they are read: the drain writes them in the same
-- transaction, so they come back if it rolls back. Shaped as the writer's AuditJob.
WITH taken AS (
  DELETE FROM audit_outbox
  WHERE position IN (SELECT position FROM audit_outbox ORDER BY position LIMIT $1)
  RETURNING *
)
SELECT taken.id, taken.project_id, t.name AS type, taken.related_table, taken.related_id, taken.origin,
       taken.actor_id, taken.ip_address, taken.details, taken.created_at
FROM taken JOIN event_types t ON t.id = taken.type_id
ORDER BY taken.position
