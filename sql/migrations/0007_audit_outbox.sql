-- The audit trail's hand-over (README, "The audit trail"). A change writes its event here, in its
-- own transaction, so the row commits or rolls back with the change; the `audit.drain` job moves
-- rows into `events`, numbered and chained, and deletes them in the same transaction, so each is
-- written exactly once, in batches, instead of a pg-boss job per change.
-- The columns hold the constraints of `events` (the type is resolved to its id by the insert), so
-- whatever a change could hand over the drain can write: a bad event fails its own change, never
-- the events queued behind it. `position` is the order of hand-over; nothing else is indexed, to
-- keep the insert as cheap as the drain's one scan needs.
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
