-- The project's latest checkpoint, or the one made at exactly sequence $2.
SELECT project_id, sequence, hash, created_at, key_id, signature
FROM audit_checkpoints
WHERE project_id = $1 AND ($2::bigint IS NULL OR sequence = $2::bigint)
ORDER BY sequence DESC
LIMIT 1
