-- Webhooks (decisions.md, "Webhooks"): a project's endpoints, the deliveries owed to them (one row
-- per endpoint and event until it succeeds or its retries run out) and the log of every attempt.
-- Each endpoint keeps how far into its project's events it has looked (`fanned_out`), so a backlog
-- of any size waits here, never in a worker's memory.
INSERT INTO event_types (id, name) VALUES
  ('evty_a620b672579f4d78edd7', 'webhook.created'),
  ('evty_f1f678e0e794e6542c8c', 'webhook.updated'),
  ('evty_67529cd72cc5dded584a', 'webhook.deleted'),
  ('evty_2ac721461c422e7282a2', 'webhook.disabled'),
  ('evty_8676a98893854a90fbed', 'webhook.secret_rotated');

-- NOT VALID: every existing row met the narrower check, and validating would read the whole trail.
ALTER TABLE events DROP CONSTRAINT events_related_table_check,
  ADD CONSTRAINT events_related_table_check
  CHECK (related_table IN ('key', 'app', 'file', 'membership', 'project', 'consumer', 'webhook')) NOT VALID;
ALTER TABLE audit_outbox DROP CONSTRAINT audit_outbox_related_table_check,
  ADD CONSTRAINT audit_outbox_related_table_check
  CHECK (related_table IN ('key', 'app', 'file', 'membership', 'project', 'consumer', 'webhook')) NOT VALID;

CREATE TABLE webhook_endpoints (
  id                     text PRIMARY KEY,
  project_id             text NOT NULL REFERENCES projects (id),
  url                    text NOT NULL,
  description            text NOT NULL DEFAULT '',
  -- Event type names; empty: every type.
  types                  text[] NOT NULL DEFAULT '{}',
  status                 text NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
  disabled_reason        text CHECK (disabled_reason IN ('gone', 'failing', 'manual')),
  -- `whsec_…` as shown once, sealed (domain/sealing.ts): deliveries sign with it.
  secret                 text NOT NULL,
  -- The secret before the last rotation, still signed with until `previous_secret_until`.
  previous_secret        text,
  previous_secret_until  timestamptz,
  -- The last sequence of the project's events looked at for this endpoint.
  fanned_out             bigint NOT NULL,
  -- A replay still to queue: the events after `replay_from` up to `replay_to`.
  replay_from            bigint,
  replay_to              bigint,
  -- The first failed attempt since the last success: 5 days of failures disable the endpoint.
  failing_since          timestamptz,
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now_seconds(),
  deleted_at             timestamptz
);
CREATE INDEX webhook_endpoints_project_listed ON webhook_endpoints (project_id, created_at DESC, id DESC) WHERE deleted_at IS NULL;
CREATE INDEX webhook_endpoints_enabled ON webhook_endpoints (project_id) WHERE status = 'enabled' AND deleted_at IS NULL;

-- What is owed: due at `next_at`; while an attempt is in flight `leased_until` is set and `next_at`
-- equals it, so a worker that dies mid-attempt hands the delivery on when its lease ends.
CREATE TABLE webhook_deliveries (
  endpoint_id   text NOT NULL REFERENCES webhook_endpoints (id),
  event_id      text NOT NULL,
  sequence      bigint NOT NULL,
  -- Attempts claimed so far; the claim's number fences its result.
  attempts      integer NOT NULL DEFAULT 0,
  next_at       timestamptz NOT NULL DEFAULT now(),
  leased_until  timestamptz,
  PRIMARY KEY (endpoint_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (endpoint_id, next_at);
-- The sweep's question: is anything due anywhere.
CREATE INDEX webhook_deliveries_next ON webhook_deliveries (next_at);
CREATE INDEX webhook_deliveries_leased ON webhook_deliveries (endpoint_id, leased_until) WHERE leased_until IS NOT NULL;

-- The delivery log: one row per attempt made; receivers' bodies are not kept.
CREATE TABLE webhook_attempts (
  id           text PRIMARY KEY,
  endpoint_id  text NOT NULL REFERENCES webhook_endpoints (id),
  event_id     text NOT NULL,
  sequence     bigint NOT NULL,
  attempt      integer NOT NULL,
  status_code  integer,
  error        text,
  duration_ms  integer NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhook_attempts_endpoint_newest ON webhook_attempts (endpoint_id, created_at DESC, id DESC);
