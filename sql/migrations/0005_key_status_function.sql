-- How a key's status reads, as a function: the view and the key insert's RETURNING both use it,
-- so creating a key needs no second query to read the new key back through the view.
-- A key past its expires_at reads `expired` from that second on, whether or not the expiry job
-- has run yet. STABLE (now()), so the planner inlines it.
CREATE FUNCTION key_status(status text, expires_at timestamptz) RETURNS text
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT CASE WHEN status = 'activated' AND expires_at <= now() THEN 'expired' ELSE status END $$;

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
  k.status AS stored_status
FROM api_keys k;
