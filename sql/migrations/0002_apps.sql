-- Apps with their input fields and instructions; the catalogue that resolves a category to a
-- model and its newest build; plans; files (logos); runs and per (app, project) totals.

CREATE TABLE plans (
  project_id        text PRIMARY KEY REFERENCES projects (id),
  custom_apps       boolean NOT NULL DEFAULT true,
  app_limit         integer NOT NULL DEFAULT 100 CHECK (app_limit >= 0),
  reasoning_quota   bigint  NOT NULL DEFAULT 1000000 CHECK (reasoning_quota >= 0),
  updated_at        timestamptz NOT NULL DEFAULT now_seconds()
);
INSERT INTO plans (project_id) SELECT id FROM projects;

CREATE TABLE data_types (
  id    text PRIMARY KEY,
  name  text NOT NULL UNIQUE
);
INSERT INTO data_types (id, name) VALUES
  ('mdti_c2a39a7ad82bc017dccd', 'input'),
  ('mdti_fdd932b23e1fa82aa942', 'text area'),
  ('mdti_0bf56e96d417b823b7e8', 'number'),
  ('mdti_52f84207d0f8a95ed43d', 'email'),
  ('mdti_5017cf8657e1df4df809', 'document'),
  ('mdti_1777f1beedfbd5cde030', 'image');

CREATE TABLE instruction_types (
  name  text PRIMARY KEY
);
INSERT INTO instruction_types (name) VALUES ('system');

CREATE TABLE models (
  id            text PRIMARY KEY,
  name          text NOT NULL UNIQUE,
  reads_images  boolean NOT NULL
);
CREATE TABLE model_builds (
  id           text PRIMARY KEY,
  model_id     text NOT NULL REFERENCES models (id),
  version      text NOT NULL,
  released_at  timestamptz NOT NULL,
  UNIQUE (model_id, version)
);
CREATE INDEX model_builds_newest ON model_builds (model_id, released_at DESC, id DESC);

-- A category picks a model; `image_model_id` is the one it uses for an app with an image field.
CREATE TABLE categories (
  name            text PRIMARY KEY,
  model_id        text NOT NULL REFERENCES models (id),
  image_model_id  text REFERENCES models (id)
);

INSERT INTO models (id, name, reads_images) VALUES
  ('modi_4a1f0c9e2b7d58136e20', 'lumen-text', false),
  ('modi_5b2e1d0f3c8e69247f31', 'lumen-vision', true),
  ('modi_6c3f2e104d9f7a358042', 'lumen-code', false);
INSERT INTO model_builds (id, model_id, version, released_at) VALUES
  ('mlyi_0f9e8d7c6b5a49382716', 'modi_4a1f0c9e2b7d58136e20', '2026-03', '2026-03-01T00:00:00Z'),
  ('mlyi_1a0f9e8d7c6b5a493827', 'modi_4a1f0c9e2b7d58136e20', '2026-09', '2026-09-01T00:00:00Z'),
  ('mlyi_2b1a0f9e8d7c6b5a4938', 'modi_5b2e1d0f3c8e69247f31', '2026-05', '2026-05-01T00:00:00Z'),
  ('mlyi_3c2b1a0f9e8d7c6b5a49', 'modi_5b2e1d0f3c8e69247f31', '2026-10', '2026-10-01T00:00:00Z'),
  ('mlyi_4d3c2b1a0f9e8d7c6b5a', 'modi_6c3f2e104d9f7a358042', '2026-08', '2026-08-01T00:00:00Z');
INSERT INTO categories (name, model_id, image_model_id) VALUES
  ('general',        'modi_4a1f0c9e2b7d58136e20', 'modi_5b2e1d0f3c8e69247f31'),
  ('writing',        'modi_4a1f0c9e2b7d58136e20', 'modi_5b2e1d0f3c8e69247f31'),
  ('summarization',  'modi_4a1f0c9e2b7d58136e20', 'modi_5b2e1d0f3c8e69247f31'),
  ('extraction',     'modi_4a1f0c9e2b7d58136e20', 'modi_5b2e1d0f3c8e69247f31'),
  ('vision',         'modi_5b2e1d0f3c8e69247f31', 'modi_5b2e1d0f3c8e69247f31'),
  ('translation',    'modi_4a1f0c9e2b7d58136e20', NULL),
  ('coding',         'modi_6c3f2e104d9f7a358042', NULL);

CREATE TABLE files (
  id          text PRIMARY KEY,
  project_id  text NOT NULL REFERENCES projects (id),
  name        text NOT NULL,
  size_bytes  integer NOT NULL,
  -- PNG, JPEG or WebP judged by the content's first bytes, not by the name.
  is_image    boolean NOT NULL,
  content     bytea NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now_seconds()
);

CREATE TABLE apps (
  id              text PRIMARY KEY,
  project_id      text NOT NULL REFERENCES projects (id),
  name            text NOT NULL,
  description     text NOT NULL,
  category        text NOT NULL REFERENCES categories (name),
  type            text NOT NULL CHECK (type IN ('private', 'public')),
  status          text NOT NULL CHECK (status IN ('draft', 'activated')),
  logo_file_id    text REFERENCES files (id),
  model_id        text NOT NULL REFERENCES models (id),
  model_build_id  text NOT NULL REFERENCES model_builds (id),
  -- Kept by the totals job: launches by the owning project, and by every other project.
  runs_private    bigint NOT NULL DEFAULT 0,
  runs_public     bigint NOT NULL DEFAULT 0,
  created_at      timestamptz NOT NULL DEFAULT now_seconds(),
  updated_at      timestamptz NOT NULL DEFAULT now_seconds(),
  deleted_at      timestamptz
);
CREATE INDEX apps_project_listed ON apps (project_id, created_at DESC, id DESC) WHERE deleted_at IS NULL;

CREATE TABLE app_data_fields (
  id           text PRIMARY KEY,
  app_id       text NOT NULL REFERENCES apps (id),
  position     integer NOT NULL,
  name         text NOT NULL,
  type_id      text NOT NULL REFERENCES data_types (id),
  placeholder  text NOT NULL,
  required     boolean NOT NULL,
  UNIQUE (app_id, name),
  UNIQUE (app_id, position)
);

CREATE TABLE app_instructions (
  id           text PRIMARY KEY,
  app_id       text NOT NULL REFERENCES apps (id),
  position     integer NOT NULL,
  type         text NOT NULL REFERENCES instruction_types (name),
  instruction  text NOT NULL,
  UNIQUE (app_id, position)
);

-- Reported by the run engine through the `run.finished` queue; stored once per run id.
CREATE TABLE runs (
  id             text PRIMARY KEY,
  app_id         text NOT NULL REFERENCES apps (id),
  project_id     text NOT NULL REFERENCES projects (id),
  status         text NOT NULL CHECK (status IN ('succeeded', 'error')),
  input_tokens   bigint CHECK (input_tokens >= 0),
  output_tokens  bigint CHECK (output_tokens >= 0),
  created_at     timestamptz NOT NULL DEFAULT now_seconds(),
  CHECK ((input_tokens IS NULL) = (output_tokens IS NULL))
);
CREATE INDEX runs_app_project ON runs (app_id, project_id) INCLUDE (status, input_tokens, output_tokens);

-- What reads show, recomputed from runs by the `app.totals` job; never aggregated at read time.
CREATE TABLE app_totals (
  app_id          text NOT NULL REFERENCES apps (id),
  project_id      text NOT NULL REFERENCES projects (id),
  runs            bigint NOT NULL,
  ok_runs         bigint NOT NULL,
  measured_runs   bigint NOT NULL,
  input_tokens    bigint NOT NULL,
  output_tokens   bigint NOT NULL,
  PRIMARY KEY (app_id, project_id)
);

-- An app as a reader sees it: `reader` is the reading project. Tokens: zeros without runs that
-- did not fail, null when none of those carried a measurement, else the sums.
-- json, not jsonb: json keeps the members in the order the API documents them.
CREATE FUNCTION app_tokens(t app_totals) RETURNS json
  LANGUAGE sql IMMUTABLE
  AS $$
    SELECT CASE
      WHEN t.app_id IS NULL OR t.ok_runs = 0 THEN json_build_object('input', 0, 'output', 0, 'total', 0)
      WHEN t.measured_runs = 0 THEN NULL
      ELSE json_build_object('input', t.input_tokens, 'output', t.output_tokens, 'total', t.input_tokens + t.output_tokens)
    END
  $$;
