-- A run's insert holds its app's row as the foreign key did (FOR KEY SHARE), so that a totals
-- recompute (app_lock_for_totals: FOR UPDATE) waits for the run's commit and counts it. On Citus
-- there is no such key: a recompute begun before a run committed missed it, and the run's own
-- job had been folded into that queued one (stately): the totals stayed one short. The row is
-- locked by a statement naming its project, which Citus routes to one shard.
CREATE OR REPLACE FUNCTION run_app_known(app text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  owner text;
BEGIN
  SELECT a.project_id INTO owner FROM apps a WHERE a.id = app;
  IF owner IS NULL THEN
    RAISE EXCEPTION 'insert or update on table "runs" violates foreign key constraint "runs_app_id_fkey"'
      USING ERRCODE = 'foreign_key_violation', TABLE = 'runs', CONSTRAINT = 'runs_app_id_fkey';
  END IF;
  PERFORM 1 FROM apps a WHERE a.id = app AND a.project_id = owner FOR KEY SHARE;
  RETURN app;
END
$$;
