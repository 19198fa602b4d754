-- A key's check reads one row: keys are checked far more often than owners are disabled, so the
-- key row keeps owners_active, which a disable (there is no enable) turns false. A key inserted
-- during a disable share-locks both owners, so the disable either waits and then sees it, or has
-- committed and the insert reads 'disabled'. Locked first (in a project creation's order) so no
-- disable slips between the backfill and the triggers while the old release serves.
LOCK TABLE consumers, projects IN SHARE ROW EXCLUSIVE MODE;

ALTER TABLE api_keys ADD COLUMN owners_active boolean NOT NULL DEFAULT true;

UPDATE api_keys k SET owners_active = false
WHERE NOT EXISTS (SELECT FROM projects p WHERE p.id = k.project_id AND p.status = 'active')
   OR NOT EXISTS (SELECT FROM consumers c WHERE c.id = k.created_by AND c.status = 'active');

-- Each owner's status is read by the statement that share-locks its row, so it is the status
-- after any disable the lock waited for.
CREATE FUNCTION api_keys_owners_active() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.owners_active := coalesce((SELECT p.status = 'active' FROM projects p WHERE p.id = NEW.project_id FOR SHARE), false)
    AND coalesce((SELECT c.status = 'active' FROM consumers c WHERE c.id = NEW.created_by FOR SHARE), false);
  RETURN NEW;
END
$$;
CREATE TRIGGER api_keys_owners_active BEFORE INSERT OR UPDATE OF project_id, created_by ON api_keys
  FOR EACH ROW EXECUTE FUNCTION api_keys_owners_active();

-- One function for both owners: a disabled project's keys by project_id, a consumer's by created_by.
CREATE FUNCTION keys_owner_disabled() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_TABLE_NAME = 'projects' THEN
    UPDATE api_keys SET owners_active = false WHERE project_id = NEW.id AND status <> 'revoked' AND owners_active;
  ELSE
    UPDATE api_keys SET owners_active = false WHERE created_by = NEW.id AND status <> 'revoked' AND owners_active;
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER keys_owner_disabled AFTER UPDATE OF status ON projects
  FOR EACH ROW WHEN (NEW.status <> 'active' AND OLD.status = 'active') EXECUTE FUNCTION keys_owner_disabled();
CREATE TRIGGER keys_owner_disabled AFTER UPDATE OF status ON consumers
  FOR EACH ROW WHEN (NEW.status <> 'active' AND OLD.status = 'active') EXECUTE FUNCTION keys_owner_disabled();

-- The consumer's keys are found by created_by: without an index the disable would scan every key.
CREATE INDEX api_keys_created_by ON api_keys (created_by);

-- The views as in 0008, the key's owners read from its own row. api_key_view gains the column at
-- its end (CREATE OR REPLACE VIEW keeps the columns it had, in order); so does api_key_usable.
CREATE OR REPLACE VIEW api_key_view AS
SELECT
  k.id,
  k.project_id,
  k.name,
  k.key_preview,
  k.scope,
  key_status(k.status, k.expires_at) AS status,
  unix_seconds(k.expires_at) AS expires_at,
  unix_seconds(k.last_used_at) AS last_used_at,
  k.created_by,
  unix_seconds(k.created_at) AS created_at,
  unix_seconds(k.updated_at) AS updated_at,
  k.created_at AS created_ts,
  k.status AS stored_status,
  k.secret_hash,
  k.owners_active
FROM api_keys k;

CREATE OR REPLACE VIEW api_key_usable AS
SELECT v.*
FROM api_key_view v
WHERE v.stored_status <> 'revoked' AND v.owners_active;
