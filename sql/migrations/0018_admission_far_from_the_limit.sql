-- The plan's admission without a queue far from the app limit. A creation holds the project's
-- advisory admission lock shared while committed apps plus every possibly open transaction fit the
-- limit, else exclusively (waiting for those in flight, then counting). Near the limit a shared
-- holder lets go (the inner block's rollback) before asking exclusively, or two would deadlock.
-- A plan UPDATE takes it exclusively, one lock per plan (raise max_locks_per_transaction or batch).

CREATE OR REPLACE FUNCTION change_lock_class(kind text) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE kind WHEN 'key' THEN 1801 WHEN 'project' THEN 1802 WHEN 'consumer' THEN 1803 WHEN 'admission' THEN 1804 END
$$;

-- Every backend that could hold a creation in flight (WAL senders too: logical replication runs
-- SQL). With PostgreSQL's defaults a plan of 100 apps always takes the exclusive way.
CREATE FUNCTION transactions_at_most() RETURNS bigint LANGUAGE sql STABLE AS $$
  SELECT current_setting('max_connections')::bigint + current_setting('max_worker_processes')::bigint
         + current_setting('max_wal_senders')::bigint + current_setting('max_prepared_transactions')::bigint
$$;

-- The plan, read under the admission lock: a refusal if it allows no custom apps (PMS01, as
-- 0011), else whether `more` apps fit within its limit beside the project's committed ones.
CREATE FUNCTION plan_has_room(project text, more bigint) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  plan plans%ROWTYPE;
  apps bigint;
BEGIN
  SELECT * INTO plan FROM plans p WHERE p.project_id = project;
  IF NOT FOUND OR NOT plan.custom_apps THEN
    RAISE EXCEPTION 'the plan does not allow custom apps' USING ERRCODE = 'PMS01';
  END IF;
  SELECT coalesce(sum(c.apps), 0) INTO apps FROM project_counts c WHERE c.project_id = project;
  RETURN apps + more <= plan.app_limit;
END
$$;

CREATE OR REPLACE FUNCTION plan_admission(project text) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  BEGIN
    PERFORM pg_advisory_xact_lock_shared(change_lock_class('admission'), hashtext(project));
    IF plan_has_room(project, transactions_at_most()) THEN
      RETURN;
    END IF;
    RAISE EXCEPTION 'near the app limit' USING ERRCODE = 'PMS05';
  EXCEPTION WHEN SQLSTATE 'PMS05' THEN
    NULL;
  END;
  PERFORM pg_advisory_xact_lock(change_lock_class('admission'), hashtext(project));
  IF NOT plan_has_room(project, 1) THEN
    RAISE EXCEPTION 'the plan''s app limit is reached' USING ERRCODE = 'PMS02';
  END IF;
END
$$;

CREATE FUNCTION plans_hold_admission() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM hold_changes_of('admission', NEW.project_id);
  RETURN NEW;
END
$$;

CREATE TRIGGER plans_hold_admission BEFORE UPDATE ON plans
  FOR EACH ROW EXECUTE FUNCTION plans_hold_admission();
