-- Request limits (decisions.md, "Request limits"; docs/request-limits.md): a key's limit, fixed at
-- its creation; a plan's default for the keys created without one; each window's count, which
-- the web processes take from in leases; and the web processes alive, whose number sizes a lease.

-- {"limit": 1..1000000, "window_s": 1..86400}, those two members and no other.
CREATE FUNCTION rate_limit_valid(r jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
  SELECT jsonb_typeof(r) = 'object'
     AND (SELECT count(*) FROM jsonb_object_keys(r)) = 2
     AND jsonb_typeof(r -> 'limit') = 'number' AND jsonb_typeof(r -> 'window_s') = 'number'
     AND (r ->> 'limit') ~ '^[0-9]+$' AND (r ->> 'window_s') ~ '^[0-9]+$'
     AND (r ->> 'limit')::numeric BETWEEN 1 AND 1000000
     AND (r ->> 'window_s')::numeric BETWEEN 1 AND 86400
$$;

ALTER TABLE api_keys ADD COLUMN rate_limit jsonb CHECK (rate_limit IS NULL OR rate_limit_valid(rate_limit));
ALTER TABLE plans ADD COLUMN rate_limit jsonb CHECK (rate_limit IS NULL OR rate_limit_valid(rate_limit));

-- Whether `wanted` lets through more than `caller`: no limit at all, more in one window, or more
-- per second over many windows. A caller without a limit is looser than anything.
CREATE FUNCTION rate_limit_looser(wanted jsonb, caller jsonb) RETURNS boolean LANGUAGE sql IMMUTABLE AS $$
  SELECT caller IS NOT NULL AND (
    wanted IS NULL
    OR (wanted ->> 'limit')::bigint > (caller ->> 'limit')::bigint
    OR (wanted ->> 'limit')::bigint * (caller ->> 'window_s')::bigint
       > (caller ->> 'limit')::bigint * (wanted ->> 'window_s')::bigint)
$$;

-- A key made by a limited key is held to that limit (PMS07: creation's 403). VOLATILE, so that a
-- plan never folds it ahead of the key check it follows.
CREATE FUNCTION rate_limit_within_caller(wanted jsonb, caller jsonb) RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF rate_limit_looser(wanted, caller) THEN
    RAISE EXCEPTION 'the new key would have a looser rate limit than the calling key' USING ERRCODE = 'PMS07';
  END IF;
  RETURN true;
END
$$;

-- The key's columns as before, rate_limit at the end (CREATE OR REPLACE VIEW keeps the columns it
-- had, in order); api_key_usable, v.* over it, is made again to take it too.
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
  k.owners_active,
  k.rate_limit
FROM api_keys k;

CREATE OR REPLACE VIEW api_key_usable AS
SELECT v.*
FROM api_key_view v
WHERE v.stored_status <> 'revoked' AND v.owners_active;

-- One row per limited key and window: how many of the window's requests the web processes took
-- between them. A window starts at a multiple of window_s (plus the key's offset) in Unix seconds.
-- Unlogged: a lease commits without waiting for a WAL flush; a crash of the server forgets the
-- windows in progress, which then count afresh.
CREATE UNLOGGED TABLE request_windows (
  key_id        text NOT NULL,
  window_start  bigint NOT NULL,
  granted       integer NOT NULL,
  -- What the last lease took, so that the upsert can say it without reading the row first.
  last_grant    integer NOT NULL,
  ends_at       timestamptz NOT NULL,
  PRIMARY KEY (key_id, window_start)
);
CREATE INDEX request_windows_ends_at ON request_windows (ends_at);

-- Each web process says it is alive every few seconds; the processes seen lately size the leases.
CREATE UNLOGGED TABLE web_processes (
  id       text PRIMARY KEY,
  seen_at  timestamptz NOT NULL
);
