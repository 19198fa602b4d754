-- A revocation's or disable's hold, and the plan's admission, take their advisory locks through
-- the project's row, as a change's check does (key_change_status, 0042): on Citus on the project's
-- node, where the changes they wait for take theirs (docs/citus.md). The rules of 0014 and 0018.

-- An advisory lock taken through the project's row: on Citus on the node that holds the project's
-- rows, wherever the function taking it runs (a statement routed there, or the coordinator); on one
-- PostgreSQL one index probe more.
CREATE FUNCTION project_lock(project text, class integer, key integer, exclusive boolean) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF exclusive THEN
    PERFORM pg_advisory_xact_lock(class, key) FROM projects WHERE id = project;
  ELSE
    PERFORM pg_advisory_xact_lock_shared(class, key) FROM projects WHERE id = project;
  END IF;
END
$$;

CREATE FUNCTION hold_changes_of(kind text, id text, project text) RETURNS void LANGUAGE sql VOLATILE AS $$
  SELECT project_lock(project, change_lock_class(kind), hashtext(id), true)
$$;

CREATE OR REPLACE FUNCTION plan_admission(project text) RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  BEGIN
    PERFORM project_lock(project, change_lock_class('admission'), hashtext(project), false);
    IF plan_has_room(project, transactions_at_most()) THEN
      RETURN;
    END IF;
    RAISE EXCEPTION 'near the app limit' USING ERRCODE = 'PMS05';
  EXCEPTION WHEN SQLSTATE 'PMS05' THEN
    NULL;
  END;
  PERFORM project_lock(project, change_lock_class('admission'), hashtext(project), true);
  IF NOT plan_has_room(project, 1) THEN
    RAISE EXCEPTION 'the plan''s app limit is reached' USING ERRCODE = 'PMS02';
  END IF;
END
$$;

CREATE OR REPLACE FUNCTION plans_hold_admission() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM hold_changes_of('admission', NEW.project_id, NEW.project_id);
  RETURN NEW;
END
$$;
