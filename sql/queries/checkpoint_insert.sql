-- Two workers may sign the same head: the first one kept is the checkpoint.
INSERT INTO audit_checkpoints (project_id, sequence, hash, created_at, key_id, signature)
SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::bigint[], $5::text[], $6::text[])
ON CONFLICT (project_id, sequence) DO NOTHING
