-- An app creation takes the project's plan row last, in its COMMIT's own message, after its app and
-- its event are written (domain/apps.ts createApp): every creation of a project queues on that row,
-- so it is held for the count and the commit, and for no round trip to the service. Each statement
-- of a VOLATILE function takes a fresh snapshot, so the count, begun after the lock was granted,
-- sees every creation that held it before (a statement with the lock in it would count from before
-- the wait). A refusal is an error with the service's own SQLSTATE (lib/sqlstate.ts), so that it
-- rolls the transaction back before its COMMIT runs.
CREATE FUNCTION plan_admission(project text) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  plan plans%ROWTYPE;
  apps bigint;
BEGIN
  SELECT * INTO plan FROM plans p WHERE p.project_id = project FOR UPDATE;
  IF NOT FOUND OR NOT plan.custom_apps THEN
    RAISE EXCEPTION 'the plan does not allow custom apps' USING ERRCODE = 'PMS01';
  END IF;
  SELECT coalesce(sum(c.apps), 0) INTO apps FROM project_counts c WHERE c.project_id = project;
  IF apps >= plan.app_limit THEN
    RAISE EXCEPTION 'the plan''s app limit is reached' USING ERRCODE = 'PMS02';
  END IF;
END
$$;

-- An app's count moves when its transaction commits (a deferred trigger), not when its row is
-- written: a creation queueing on the plan row then holds no row of project_counts, which key
-- changes and app deletions of the project share (sql/migrations/0003), and the count above is of
-- committed apps only, the caller's own not among them.
DROP TRIGGER apps_count ON apps;
CREATE CONSTRAINT TRIGGER apps_count AFTER INSERT OR UPDATE OF deleted_at ON apps
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION count_project_apps();
