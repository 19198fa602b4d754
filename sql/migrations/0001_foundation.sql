-- Projects, the consumers (people) who own keys, API keys, and the audit trail.
-- Times are timestamptz truncated to whole seconds: the API speaks Unix seconds, and ordering
-- "newest first" by (created_at, id) must mean the same thing in SQL and in a response.

CREATE FUNCTION unix_seconds(ts timestamptz) RETURNS bigint
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  AS $$ SELECT extract(epoch FROM ts)::bigint $$;

CREATE FUNCTION now_seconds() RETURNS timestamptz
  LANGUAGE sql STABLE PARALLEL SAFE
  AS $$ SELECT date_trunc('second', now()) $$;

CREATE TABLE consumers (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  status      text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
  created_at  timestamptz NOT NULL DEFAULT now_seconds(),
  updated_at  timestamptz NOT NULL DEFAULT now_seconds()
);

CREATE TABLE projects (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  status      text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
  created_at  timestamptz NOT NULL DEFAULT now_seconds(),
  updated_at  timestamptz NOT NULL DEFAULT now_seconds()
);

CREATE TABLE memberships (
  project_id  text NOT NULL REFERENCES projects (id),
  consumer_id text NOT NULL REFERENCES consumers (id),
  role        text NOT NULL DEFAULT 'owner',
  created_at  timestamptz NOT NULL DEFAULT now_seconds(),
  PRIMARY KEY (project_id, consumer_id)
);
CREATE INDEX memberships_consumer ON memberships (consumer_id);

CREATE TABLE api_keys (
  id            text PRIMARY KEY,
  project_id    text NOT NULL REFERENCES projects (id),
  created_by    text NOT NULL REFERENCES consumers (id),
  name          text NOT NULL,
  -- SHA-256 of the secret; the secret itself is never stored.
  secret_hash   bytea NOT NULL UNIQUE,
  key_preview   text NOT NULL,
  scope         text[] NOT NULL,
  status        text NOT NULL DEFAULT 'activated' CHECK (status IN ('activated', 'expired', 'revoked')),
  expires_at    timestamptz,
  last_used_at  timestamptz,
  created_at    timestamptz NOT NULL DEFAULT now_seconds(),
  updated_at    timestamptz NOT NULL DEFAULT now_seconds()
);
-- Listing: the project's keys that are not revoked, newest first.
CREATE INDEX api_keys_project_listed ON api_keys (project_id, created_at DESC, id DESC) WHERE status <> 'revoked';
-- The expiry job: activated keys with an expiry, soonest first.
CREATE INDEX api_keys_expiring ON api_keys (expires_at) WHERE status = 'activated' AND expires_at IS NOT NULL;

CREATE TABLE event_types (
  id    text PRIMARY KEY,
  name  text NOT NULL UNIQUE
);

INSERT INTO event_types (id, name) VALUES
  ('evty_0a1b5c2f7d93e4068b11', 'key.created'),
  ('evty_1c7e2d94a0b3f5e16c22', 'key.revoked'),
  ('evty_2d8f3ea5b1c406f27d33', 'key.expired'),
  ('evty_3e904fb6c2d517038e44', 'app.created'),
  ('evty_4fa150c7d3e628149f55', 'app.updated'),
  ('evty_50b261d8e4f73925a066', 'app.published'),
  ('evty_61c372e9f5084a36b177', 'app.unpublished'),
  ('evty_72d483fa06195b47c288', 'app.activated'),
  ('evty_83e5940b172a6c58d399', 'app.logo_changed'),
  ('evty_94f6a51c283b7d69e4aa', 'app.deleted'),
  ('evty_a507b62d394c8e7af5bb', 'project.created'),
  ('evty_b618c73e4a5d9f8b06cc', 'project.disabled'),
  ('evty_c729d84f5b6ea09c17dd', 'consumer.disabled'),
  ('evty_d83ae9506c7fb1ad28ee', 'plan.changed');

CREATE TABLE events (
  id             text PRIMARY KEY,
  project_id     text NOT NULL REFERENCES projects (id),
  type_id        text NOT NULL REFERENCES event_types (id),
  related_table  text NOT NULL CHECK (related_table IN ('key', 'app', 'file', 'membership', 'project', 'consumer')),
  related_id     text NOT NULL,
  origin         text NOT NULL CHECK (origin IN ('api', 'workspace', 'system')),
  ip_address     text NOT NULL,
  details        jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(details) IN ('object', 'array')),
  created_at     timestamptz NOT NULL
);
CREATE INDEX events_project_newest ON events (project_id, created_at DESC, id DESC);

-- Kept by the audit writer so that the feed's `total` does not count a growing table per read.
CREATE TABLE project_event_counts (
  project_id  text PRIMARY KEY REFERENCES projects (id),
  total       bigint NOT NULL DEFAULT 0
);

-- How a key reads through the API. A key past its expires_at reads `expired` from that second on,
-- whether or not the expiry job has run yet.
CREATE VIEW api_key_view AS
SELECT
  k.id,
  k.project_id,
  k.name,
  k.key_preview,
  k.scope,
  CASE WHEN k.status = 'activated' AND k.expires_at <= now() THEN 'expired' ELSE k.status END AS status,
  unix_seconds(k.expires_at) AS expires_at,
  unix_seconds(k.last_used_at) AS last_used_at,
  k.created_by,
  unix_seconds(k.created_at) AS created_at,
  unix_seconds(k.updated_at) AS updated_at,
  k.created_at AS created_ts,
  -- Filters on the stored status (not the computed one) match the partial index api_keys_project_listed.
  k.status AS stored_status
FROM api_keys k;

CREATE VIEW event_view AS
SELECT
  e.id,
  e.project_id,
  t.id AS type_id,
  t.name AS type_name,
  e.related_table,
  e.related_id,
  e.origin,
  e.ip_address,
  e.details,
  unix_seconds(e.created_at) AS created_at,
  e.created_at AS created_ts
FROM events e
JOIN event_types t ON t.id = e.type_id;
