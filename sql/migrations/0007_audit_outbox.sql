-- The audit trail's hand-over: a change writes its event here in its own transaction; the
-- `audit.drain` job moves rows into `events` and deletes them in one transaction, exactly once.
-- The columns carry the constraints of `events`, so a bad event fails its own change, never the
-- events queued behind it. Only `position` (hand-over order) is indexed, to keep the insert cheap.
CREATE TABLE audit_outbox (
  position       bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id             text NOT NULL,
  project_id     text NOT NULL,
  type_id        text NOT NULL,
  related_table  text NOT NULL CHECK (related_table IN ('key', 'app', 'file', 'membership', 'project', 'consumer')),
  related_id     text NOT NULL,
  origin         text NOT NULL CHECK (origin IN ('api', 'workspace', 'system')),
  actor_id       text,
  ip_address     text NOT NULL,
  details        jsonb NOT NULL CHECK (jsonb_typeof(details) IN ('object', 'array')),
  created_at     bigint NOT NULL
);
