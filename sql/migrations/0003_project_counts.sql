-- Per-project counts of listed keys and live apps, kept by triggers in the changing transaction,
-- so that list totals and the plan's app limit read a few rows instead of counting a growing
-- table. Each project's count is spread over slots chosen by the writing connection: concurrent
-- changes in one project then lock different rows instead of queueing on one until commit.
-- A slot may go negative (a key counted in one slot, revoked through another); the sum is exact.

CREATE TABLE project_counts (
  project_id  text NOT NULL REFERENCES projects (id),
  slot        smallint NOT NULL,
  keys        bigint NOT NULL DEFAULT 0,
  apps        bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, slot)
);

INSERT INTO project_counts (project_id, slot, keys, apps)
SELECT p.id, 0,
       (SELECT count(*) FROM api_keys k WHERE k.project_id = p.id AND k.status <> 'revoked'),
       (SELECT count(*) FROM apps a WHERE a.project_id = p.id AND a.deleted_at IS NULL)
FROM projects p;

CREATE FUNCTION count_slot() RETURNS smallint LANGUAGE sql STABLE
  AS $$ SELECT (pg_backend_pid() % 16)::smallint $$;

CREATE FUNCTION count_project_keys() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  delta bigint := CASE
    WHEN TG_OP = 'INSERT' AND NEW.status <> 'revoked' THEN 1
    WHEN TG_OP = 'UPDATE' AND OLD.status <> 'revoked' AND NEW.status = 'revoked' THEN -1
    ELSE 0 END;
BEGIN
  IF delta <> 0 THEN
    INSERT INTO project_counts AS c (project_id, slot, keys) VALUES (NEW.project_id, count_slot(), delta)
    ON CONFLICT (project_id, slot) DO UPDATE SET keys = c.keys + delta;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER api_keys_count AFTER INSERT OR UPDATE OF status ON api_keys
  FOR EACH ROW EXECUTE FUNCTION count_project_keys();

CREATE FUNCTION count_project_apps() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  delta bigint := CASE
    WHEN TG_OP = 'INSERT' AND NEW.deleted_at IS NULL THEN 1
    WHEN TG_OP = 'UPDATE' AND OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL THEN -1
    ELSE 0 END;
BEGIN
  IF delta <> 0 THEN
    INSERT INTO project_counts AS c (project_id, slot, apps) VALUES (NEW.project_id, count_slot(), delta)
    ON CONFLICT (project_id, slot) DO UPDATE SET apps = c.apps + delta;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER apps_count AFTER INSERT OR UPDATE OF deleted_at ON apps
  FOR EACH ROW EXECUTE FUNCTION count_project_apps();
