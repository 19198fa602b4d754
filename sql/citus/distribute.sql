-- docs/citus.md's layout, applied by release after the migrations where the citus extension is
-- present, in one transaction. Each run places what is not placed yet (a table a later migration
-- made), so it runs every release. A foreign key cannot join a distributed table to a local one:
-- those touching a table to place are dropped around its placing and made again.
SET LOCAL citus.enable_unsafe_triggers = on;
SET LOCAL citus.multi_shard_modify_mode = 'sequential';

CREATE TEMP TABLE pms_layout (tbl regclass, placement text, distribution_column text, position int) ON COMMIT DROP;
INSERT INTO pms_layout VALUES
  ('consumers', 'reference', NULL, 1),
  ('event_types', 'reference', NULL, 2),
  ('data_types', 'reference', NULL, 3),
  ('instruction_types', 'reference', NULL, 4),
  ('models', 'reference', NULL, 5),
  ('model_builds', 'reference', NULL, 6),
  ('categories', 'reference', NULL, 7),
  ('audit_signing_keys', 'reference', NULL, 8),
  ('projects', 'distributed', 'id', 10),
  ('memberships', 'distributed', 'project_id', 11),
  ('api_keys', 'distributed', 'project_id', 12),
  ('plans', 'distributed', 'project_id', 13),
  ('project_counts', 'distributed', 'project_id', 14),
  ('files', 'distributed', 'project_id', 15),
  ('apps', 'distributed', 'project_id', 16),
  ('app_data_fields', 'distributed', 'project_id', 17),
  ('app_instructions', 'distributed', 'project_id', 18),
  ('runs', 'distributed', 'project_id', 19),
  ('app_totals', 'distributed', 'project_id', 20),
  ('events', 'distributed', 'project_id', 21),
  ('project_event_counts', 'distributed', 'project_id', 22),
  ('audit_checkpoints', 'distributed', 'project_id', 23),
  ('audit_outbox', 'distributed', 'project_id', 24),
  -- Kept on the coordinator (docs/citus.md): the webhooks' delivery queue and its log, claimed
  -- across every project under one lock with SKIP LOCKED, and their endpoints locked with them;
  -- the web processes' request windows and their roll; the kept answers of idempotent requests.
  ('webhook_endpoints', 'coordinator', NULL, 30),
  ('webhook_deliveries', 'coordinator', NULL, 31),
  ('webhook_attempts', 'coordinator', NULL, 32),
  ('request_windows', 'coordinator', NULL, 33),
  ('web_processes', 'coordinator', NULL, 34),
  ('idempotent_requests', 'coordinator', NULL, 35);

-- Once, before the first placing: what only one database can have.
DO $$
BEGIN
  IF EXISTS (SELECT FROM pg_dist_partition WHERE logicalrelid = 'projects'::regclass) THEN
    RETURN;
  END IF;
  -- Runs and totals are the launching project's, of apps of any project: no key can join them.
  ALTER TABLE runs DROP CONSTRAINT runs_app_id_fkey;
  ALTER TABLE app_totals DROP CONSTRAINT app_totals_app_id_fkey;
  ALTER TABLE apps DROP CONSTRAINT apps_id_key;
  ALTER TABLE audit_outbox DROP CONSTRAINT audit_outbox_pkey, ADD PRIMARY KEY (position, project_id);
  -- The keys there are now, by hash: later secrets carry their project (domain/secrets.ts).
  DROP VIEW api_key_routes;
  CREATE TABLE api_key_routes (secret_hash bytea PRIMARY KEY, project_id text NOT NULL);
  INSERT INTO api_key_routes SELECT secret_hash, project_id FROM api_keys ON CONFLICT DO NOTHING;
  INSERT INTO pms_layout VALUES ('api_key_routes', 'reference', NULL, 9);
  -- A consumer's keys span projects, so every node: its disable updates them itself (domain/projects.ts).
  DROP TRIGGER keys_owner_disabled ON consumers;
  -- Citus runs no trigger with a transition table (0019): a row trigger moves the project's
  -- feed version instead, on the shard, where the project's counter row is too. A TRUNCATE of
  -- events by hand is no longer seen.
  DROP TRIGGER events_updated_move_feed_versions ON events;
  DROP TRIGGER events_deleted_move_feed_versions ON events;
  DROP TRIGGER events_truncated_move_feed_versions ON events;
  CREATE FUNCTION event_moves_feed_version() RETURNS trigger LANGUAGE plpgsql AS $f$
  BEGIN
    UPDATE project_event_counts c SET total = c.total WHERE c.project_id = OLD.project_id;
    RETURN NULL;
  END
  $f$;
  CREATE TRIGGER event_moves_feed_version AFTER UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION event_moves_feed_version();
END
$$;

-- The expiry job's due keys are of every project: Citus locks rows only in a statement routed to
-- one shard. So the projects with due keys are found first (every shard, no lock), then each one's
-- keys are marked by a statement of its own, routed to its shard, FOR UPDATE SKIP LOCKED as on one
-- PostgreSQL: two workers share the batch, and a key whose row is held is passed over.
CREATE OR REPLACE FUNCTION expire_due_keys(batch integer) RETURNS TABLE (id text, project_id text, expires_at bigint)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  due_project text;
  room integer := batch;
  marked integer;
BEGIN
  FOR due_project IN
    SELECT DISTINCT k.project_id FROM api_keys k
    WHERE k.status = 'activated' AND k.expires_at IS NOT NULL AND k.expires_at <= now()
  LOOP
    RETURN QUERY
    UPDATE api_keys k
    SET status = 'expired', updated_at = k.expires_at
    FROM (
      SELECT d.id FROM api_keys d
      WHERE d.project_id = due_project AND d.status = 'activated' AND d.expires_at IS NOT NULL AND d.expires_at <= now()
      ORDER BY d.expires_at
      LIMIT room
      FOR UPDATE SKIP LOCKED
    ) due
    WHERE k.project_id = due_project AND k.id = due.id
    RETURNING k.id, k.project_id, unix_seconds(k.expires_at);
    GET DIAGNOSTICS marked = ROW_COUNT;
    room := room - marked;
    EXIT WHEN room <= 0;
  END LOOP;
END
$$;

CREATE TEMP TABLE pms_unplaced ON COMMIT DROP AS
SELECT l.* FROM pms_layout l
WHERE l.placement <> 'coordinator' AND NOT EXISTS (SELECT FROM pg_dist_partition p WHERE p.logicalrelid = l.tbl);

CREATE TEMP TABLE pms_foreign_keys ON COMMIT DROP AS
SELECT c.conrelid::regclass AS tbl, c.conname, pg_get_constraintdef(c.oid) AS definition
FROM pg_constraint c
WHERE c.contype = 'f'
  AND (c.conrelid IN (SELECT tbl FROM pms_unplaced) OR c.confrelid IN (SELECT tbl FROM pms_unplaced));

DO $$
DECLARE
  fk record;
  t record;
BEGIN
  FOR fk IN SELECT * FROM pms_foreign_keys LOOP
    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', fk.tbl, fk.conname);
  END LOOP;
  FOR t IN SELECT * FROM pms_unplaced ORDER BY position LOOP
    IF t.placement = 'reference' THEN
      PERFORM create_reference_table(t.tbl);
    ELSIF t.tbl = 'projects'::regclass THEN
      PERFORM create_distributed_table(t.tbl, t.distribution_column);
    ELSE
      PERFORM create_distributed_table(t.tbl, t.distribution_column, colocate_with => 'projects');
    END IF;
    -- The rows now live in the shards; the coordinator's own copy would only take space.
    PERFORM truncate_local_data_after_distributing_table(t.tbl);
  END LOOP;
  FOR fk IN SELECT * FROM pms_foreign_keys WHERE tbl NOT IN (SELECT tbl FROM pms_layout WHERE placement = 'coordinator') LOOP
    EXECUTE format('ALTER TABLE %s ADD CONSTRAINT %I %s', fk.tbl, fk.conname, fk.definition);
  END LOOP;
END
$$;

-- A coordinator table cannot reference a placed one: the coordinator keeps no rows of it to check
-- against. Such keys (webhook_endpoints.project_id) go; the API writes only its caller's project.
DO $$
DECLARE
  fk record;
BEGIN
  FOR fk IN
    SELECT c.conrelid::regclass AS tbl, c.conname FROM pg_constraint c
    WHERE c.contype = 'f' AND c.conrelid IN (SELECT tbl FROM pms_layout WHERE placement = 'coordinator')
      AND c.confrelid IN (SELECT logicalrelid FROM pg_dist_partition)
  LOOP
    EXECUTE format('ALTER TABLE %s DROP CONSTRAINT %I', fk.tbl, fk.conname);
  END LOOP;
END
$$;

-- Every function of ours on every node: a change's statement runs where its project's shards are,
-- and calls them there. Those in PL/pgSQL read that project's rows from inside the statement, which
-- Citus allows per function (docs/citus.md, "Inside a change's statement").
CREATE TEMP TABLE pms_functions ON COMMIT DROP AS
SELECT p.oid::regprocedure AS fn, l.lanname AS language,
       EXISTS (SELECT FROM pg_dist_object o WHERE o.classid = 'pg_proc'::regclass AND o.objid = p.oid) AS placed,
       coalesce('citus.allow_nested_distributed_execution=on' = ANY (p.proconfig), false) AS nests
FROM pg_proc p
JOIN pg_language l ON l.oid = p.prolang
WHERE p.pronamespace = 'public'::regnamespace
  AND NOT EXISTS (SELECT FROM pg_depend d WHERE d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e');

SELECT create_distributed_function(fn) FROM pms_functions WHERE NOT placed;

DO $$
DECLARE
  f record;
BEGIN
  FOR f IN SELECT * FROM pms_functions WHERE language = 'plpgsql' AND NOT nests LOOP
    EXECUTE format('ALTER FUNCTION %s SET citus.allow_nested_distributed_execution = on', f.fn);
  END LOOP;
END
$$;
