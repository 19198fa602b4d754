-- The expiry job's statement as a function, so that release can give Citus its own form of it
-- (sql/citus/distribute.sql): Citus locks rows only where it knows the shard, and the due keys
-- are of every project. Here the statement of key_expire_due.sql as it was.
CREATE FUNCTION expire_due_keys(batch integer) RETURNS TABLE (id text, project_id text, expires_at bigint)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY
  UPDATE api_keys k
  SET status = 'expired', updated_at = k.expires_at
  FROM (
    SELECT id FROM api_keys
    WHERE status = 'activated' AND expires_at IS NOT NULL AND expires_at <= now()
    ORDER BY expires_at
    LIMIT batch
    FOR UPDATE SKIP LOCKED
  ) due
  WHERE k.id = due.id
  RETURNING k.id, k.project_id, unix_seconds(k.expires_at);
END
$$;
