-- A key's checks name its project: on Citus the key's row is on its project's shard, the one a
-- change's statement is routed to, and a lookup by id alone would ask every shard (docs/citus.md).
-- The same rules as 0014, 0017, 0009 and 0021; their one-project-less forms stay for the processes
-- of the release before while it rolls over.

-- The key and its owners held (in 0014's order) by one statement through the key's own row, so on
-- Citus on its project's node; then its status read by a statement of its own, whose snapshot
-- follows whatever revocation or disable the locks waited for.
CREATE FUNCTION key_change_status(key_id text, project text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(change_lock_class('key'), hashtext(key_id)),
          pg_advisory_xact_lock_shared(change_lock_class('project'), hashtext(project)),
          pg_advisory_xact_lock_shared(change_lock_class('consumer'), hashtext(k.created_by))
  FROM api_keys k WHERE k.id = key_id AND k.project_id = project;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  RETURN (SELECT status FROM api_key_usable WHERE id = key_id AND project_id = project);
END
$$;

CREATE FUNCTION change_key_check(key_id text, project text) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  status text;
BEGIN
  IF key_id IS NULL THEN
    RETURN true;
  END IF;
  status := key_change_status(key_id, project);
  IF status IS NOT DISTINCT FROM 'activated' THEN
    RETURN true;
  END IF;
  IF status = 'expired' THEN
    RAISE EXCEPTION 'the key has expired' USING ERRCODE = 'PMS04';
  END IF;
  RAISE EXCEPTION 'the key is refused' USING ERRCODE = 'PMS03';
END
$$;

CREATE FUNCTION key_usable_status(key_id text, project text) RETURNS text LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (SELECT status FROM api_key_usable WHERE id = key_id AND project_id = project);
END
$$;

CREATE FUNCTION key_within_caller_life(caller_id text, expires_at bigint, project text) RETURNS boolean LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF EXISTS (
    SELECT FROM api_keys k
    WHERE k.id = caller_id AND k.project_id = project AND k.expires_at IS NOT NULL
      AND (key_within_caller_life.expires_at IS NULL OR key_within_caller_life.expires_at > unix_seconds(k.expires_at))
  ) THEN
    RAISE EXCEPTION 'the new key would outlive the calling key' USING ERRCODE = 'PMS06';
  END IF;
  RETURN true;
END
$$;
