-- The project's newest events as the JSON array of their stored JSON (null: none), and the total
-- from the counter row, in one row.
SELECT coalesce((SELECT total FROM project_event_counts WHERE project_id = $1), 0) AS total,
       (SELECT '[' || string_agg(body, ',' ORDER BY created_at DESC, sequence DESC) || ']'
        FROM (SELECT body, created_at, sequence FROM events
              WHERE project_id = $1
              ORDER BY created_at DESC, sequence DESC
              LIMIT $2) newest) AS data
