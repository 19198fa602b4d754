-- A run report names its app, which may be another project's: on one PostgreSQL runs.app_id's
-- foreign key refuses an app that does not exist, but on Citus that key cannot be (docs/citus.md,
-- "Keys that hold the project"). run_insert.sql asks this first, with the key's own error.
CREATE FUNCTION run_app_known(app text) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  -- SELECT 1, not SELECT FROM: Citus cannot plan an empty target list over every shard.
  IF NOT EXISTS (SELECT 1 FROM apps a WHERE a.id = app) THEN
    RAISE EXCEPTION 'insert or update on table "runs" violates foreign key constraint "runs_app_id_fkey"'
      USING ERRCODE = 'foreign_key_violation', TABLE = 'runs', CONSTRAINT = 'runs_app_id_fkey';
  END IF;
  RETURN app;
END
$$;
