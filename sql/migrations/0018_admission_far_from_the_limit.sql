-- The plan's admission without a queue while the project is far from its app limit. Until now
-- every creation of a project locked its plan row (sql/migrations/0011) and held it through its
-- commit's WAL flush, so a project's creations committed one flush at a time.
--
-- Now a creation holds its project's admission lock, an advisory lock (class 1804 beside the
-- change locks of sql/migrations/0014), from its count to its end:
-- - shared, while the committed apps plus every creation that could be in flight stay within
--   the limit: no more transactions can be open at once than the server has backends and
--   prepared transactions, so whatever those in flight commit, the limit holds, and creations
--   that hold it shared never wait on each other;
-- - exclusively, nearer the limit: it waits for every creation in flight, then counts what they
--   committed, exactly as the plan row did.
-- A creation that finds itself near the limit while holding the lock shared gives it back (the
-- inner block's rollback releases what it took) and asks again exclusively: two creations that
-- each held it shared and waited for the other to let go would deadlock.
-- The plan is read under that lock, and a plan's change takes it exclusively (plans_hold_admission
-- below): a change of the plan waits for the creations in flight, and a creation after it reads
-- the plan it left. On every UPDATE of plans, whatever makes it: one lock per plan changed, so an
-- UPDATE of thousands of plans at once wants max_locks_per_transaction raised, or batches.

CREATE OR REPLACE FUNCTION change_lock_class(kind text) RETURNS integer LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE kind WHEN 'key' THEN 1801 WHEN 'project' THEN 1802 WHEN 'consumer' THEN 1803 WHEN 'admission' THEN 1804 END
$$;

-- Every backend that could hold a creation in flight: client connections, background workers,
-- WAL senders (a logical replication connection runs SQL too, outside max_connections) and
-- prepared transactions. 418 on the embedded server; 118 with PostgreSQL's defaults, so a plan
-- of the default 100 apps always takes the exclusive way, as every creation did before.
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
