-- The one definition of "this key authenticates": not revoked, project and consumer active
-- (expired keys included, refused with their own 401). A view, so the planner folds it into each
-- statement. api_key_view gains the hash at its end (as CREATE OR REPLACE VIEW requires).
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
  -- Filters on the stored status (not the computed one) match the partial index api_keys_project_listed.
  k.status AS stored_status,
  k.secret_hash
FROM api_keys k;

CREATE VIEW api_key_usable AS
SELECT v.*
FROM api_key_view v
JOIN projects p ON p.id = v.project_id AND p.status = 'active'
JOIN consumers c ON c.id = v.created_by AND c.status = 'active'
WHERE v.stored_status <> 'revoked';
