-- Web processes keep a project's feed page by its counter row's version, which every writer of
-- events moves. An UPDATE, DELETE or TRUNCATE of events by any other hand moves it too, so no
-- process keeps a page the table no longer holds. Statement-level: a statement pays once.

-- The version: a counter row's xmin, total and head (an xid alone could recur after a restore).
CREATE FUNCTION feed_version(row_xmin xid, total bigint, last_hash text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT row_xmin::text || ':' || total || ':' || coalesce(last_hash, '')
$$;

CREATE FUNCTION events_move_feed_versions() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    UPDATE project_event_counts SET total = total;
  ELSE
    UPDATE project_event_counts c SET total = c.total
    WHERE c.project_id IN (SELECT DISTINCT project_id FROM changed);
  END IF;
  RETURN NULL;
END
$$;

CREATE TRIGGER events_updated_move_feed_versions AFTER UPDATE ON events
  REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION events_move_feed_versions();
CREATE TRIGGER events_deleted_move_feed_versions AFTER DELETE ON events
  REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION events_move_feed_versions();
CREATE TRIGGER events_truncated_move_feed_versions AFTER TRUNCATE ON events
  FOR EACH STATEMENT EXECUTE FUNCTION events_move_feed_versions();
