-- Per-project counts of listed keys and live apps, kept by triggers in the changing transaction,
-- so that list totals and the plan's app limit read one row instead of counting a growing table.

CREATE TABLE project_counts (
  project_id  text PRIMARY KEY REFERENCES projects (id),
  keys        bigint NOT NULL DEFAULT 0 CHECK (keys >= 0),
  apps        bigint NOT NULL DEFAULT 0 CHECK (apps >= 0)
);

INSERT INTO project_counts (project_id, keys, apps)
SELECT p.id,
       (SELECT count(*) FROM api_keys k WHERE k.project_id = p.id AND k.status <> 'revoked'),
       (SELECT count(*) FROM apps a WHERE a.project_id = p.id AND a.deleted_at IS NULL)
FROM projects p;

CREATE FUNCTION count_project_keys() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  delta bigint := CASE
    WHEN TG_OP = 'INSERT' AND NEW.status <> 'revoked' THEN 1
    WHEN TG_OP = 'UPDATE' AND OLD.status <> 'revoked' AND NEW.status = 'revoked' THEN -1
    ELSE 0 END;
BEGIN
  -- A decrement updates in place: the CHECK would refuse an INSERT's proposed row of -1
  -- before ON CONFLICT is considered.
  IF delta > 0 THEN
    INSERT INTO project_counts AS c (project_id, keys) VALUES (NEW.project_id, delta)
    ON CONFLICT (project_id) DO UPDATE SET keys = c.keys + delta;
  ELSIF delta < 0 THEN
    UPDATE project_counts SET keys = keys + delta WHERE project_id = NEW.project_id;
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
  -- A decrement updates in place: the CHECK would refuse an INSERT's proposed row of -1
  -- before ON CONFLICT is considered.
  IF delta > 0 THEN
    INSERT INTO project_counts AS c (project_id, apps) VALUES (NEW.project_id, delta)
    ON CONFLICT (project_id) DO UPDATE SET apps = c.apps + delta;
  ELSIF delta < 0 THEN
    UPDATE project_counts SET apps = apps + delta WHERE project_id = NEW.project_id;
  END IF;
  RETURN NULL;
END $$;

CREATE TRIGGER apps_count AFTER INSERT OR UPDATE OF deleted_at ON apps
  FOR EACH ROW EXECUTE FUNCTION count_project_apps();
