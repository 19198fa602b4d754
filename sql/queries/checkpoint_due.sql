-- Projects whose chain head moved past their latest checkpoint, made at least $1 seconds before
-- $2 (now, Unix seconds): the head to sign for each, at most $3 of them.
SELECT c.project_id, c.total::bigint AS sequence, c.last_hash AS hash
FROM project_event_counts c
LEFT JOIN LATERAL (
  SELECT k.sequence, k.created_at FROM audit_checkpoints k
  WHERE k.project_id = c.project_id ORDER BY k.sequence DESC LIMIT 1
) latest ON true
WHERE c.last_hash IS NOT NULL
  AND c.total > coalesce(latest.sequence, 0)
  AND (latest.created_at IS NULL OR latest.created_at <= $2::bigint - $1::bigint)
ORDER BY c.project_id
LIMIT $3
