-- A project's feed page is kept by each web process with the version of its counter row in
-- project_event_counts (domain/feed-pages.ts), which every writer of events moves in the same
-- transaction (event_chain_lock.sql). An UPDATE or DELETE of events by any other hand (an operator
-- redacting a detail, a future migration, a test) moves the rows of the projects it touched too,
-- and a TRUNCATE every row, so no web process keeps answering a page the table no longer holds.
-- Statement-level: the drain's inserts do not fire it, and a statement pays once, not per row.

-- The version itself, of a counter row's xmin, total and head (event_list_version.sql, event_list.sql):
-- a transaction id alone could come again after a restore or a failover. Inlined where it is read.
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
