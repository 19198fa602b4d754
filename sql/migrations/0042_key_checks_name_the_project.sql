-- A key's checks name its project: on Citus the key's row is on its project's shard, the one a
-- change's statement is routed to, and a lookup by id alone would ask every shard (docs/citus.md).
-- The same rules as 0014, 0017, 0009 and 0021; their one-project-less forms stay for the processes
-- of the release before while it rolls over.

-- A change's advisory lock, taken through its project's row: on Citus on the node that holds the
-- project's rows, wherever the function taking it runs (a statement routed there, or the
-- coordinator), so a change and a revocation or disable meet on one node; here one probe more.
CREATE FUNCTION project_lock(project text, class integer, key integer, exclusive boolean) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF exclusive THEN
    PERFORM pg_advisory_xact_lock(class, key) FROM projects WHERE id = project;
  ELSE
    PERFORM pg_advisory_xact_lock_shared(class, key) FROM projects WHERE id = project;
  END IF;
END
$$;

CREATE FUNCTION key_change_status(key_id text, project text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  owner record;
BEGIN
  SELECT created_by INTO owner FROM api_keys WHERE id = key_id AND project_id = project;
  IF NOT FOUND THEN
    RETURN NULL;
  END IF;
  PERFORM project_lock(project, change_lock_class('key'), hashtext(key_id), false);
  PERFORM project_lock(project, change_lock_class('project'), hashtext(project), false);
  PERFORM project_lock(project, change_lock_class('consumer'), hashtext(owner.created_by), false);
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
