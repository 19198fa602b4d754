-- Which owner a disable ends is the trigger's argument, not its table's name (0010): on Citus the
-- trigger fires on a shard, whose name is the table's with a number (projects_102008). The same
-- rule otherwise. Citus asks for its setting to (re)make a trigger on a distributed table.
SET LOCAL citus.enable_unsafe_triggers = on;

CREATE OR REPLACE FUNCTION keys_owner_disabled() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_ARGV[0] = 'project' THEN
    UPDATE api_keys SET owners_active = false WHERE project_id = NEW.id AND status <> 'revoked' AND owners_active;
  ELSE
    UPDATE api_keys SET owners_active = false WHERE created_by = NEW.id AND status <> 'revoked' AND owners_active;
  END IF;
  RETURN NULL;
END
$$;

DROP TRIGGER keys_owner_disabled ON projects;
CREATE TRIGGER keys_owner_disabled AFTER UPDATE OF status ON projects
  FOR EACH ROW WHEN (NEW.status <> 'active' AND OLD.status = 'active') EXECUTE FUNCTION keys_owner_disabled('project');
DROP TRIGGER keys_owner_disabled ON consumers;
CREATE TRIGGER keys_owner_disabled AFTER UPDATE OF status ON consumers
  FOR EACH ROW WHEN (NEW.status <> 'active' AND OLD.status = 'active') EXECUTE FUNCTION keys_owner_disabled('consumer');
