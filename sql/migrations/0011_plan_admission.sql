-- An app creation locks the project's plan row last, in its COMMIT's message, so it is held for no
-- round trip. Each statement of a VOLATILE function takes a fresh snapshot, so the count, begun
-- after the lock, sees every creation that held it before. A refusal raises the service's own
-- SQLSTATE, rolling the transaction back before its COMMIT runs.
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

-- An app's count moves at commit (a deferred trigger): a creation queueing on the plan row holds
-- no project_counts row (shared with the project's other changes), and counts committed apps only.
DROP TRIGGER apps_count ON apps;
CREATE CONSTRAINT TRIGGER apps_count AFTER INSERT OR UPDATE OF deleted_at ON apps
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION count_project_apps();
