-- The project's newest events as the JSON array of their stored JSON (null: none), and the total
-- and the version (domain/feed-pages.ts, feed_version of sql/migrations/0019) from the counter row,
-- in one row, of one snapshot.
-- The limit is a sub-select, a value the planner cannot see: it then plans for a tenth of the
-- rows it expects, which only the ordered index scan of events_project_newest serves cheaply, so
-- the page reads its rows and stops, whatever the statistics say of the project. With a value it
-- can see and too few rows expected (a project with many more events than the statistics know,
-- or a table not yet analyzed), it read all the project's events and sorted them
-- (test/events/feed.test.ts).
SELECT c.total, c.version,
       (SELECT '[' || string_agg(body, ',' ORDER BY created_at DESC, sequence DESC) || ']'
        FROM (SELECT body, created_at, sequence FROM events
              WHERE project_id = $1
              ORDER BY created_at DESC, sequence DESC
              LIMIT (SELECT $2::bigint)) newest) AS data
FROM (SELECT coalesce(max(total), 0) AS total,
             max(feed_version(xmin, total, last_hash)) AS version
      FROM project_event_counts WHERE project_id = $1) c
