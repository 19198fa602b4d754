-- A project's chain head as the audit writer keeps it: its last sequence (0 without events) and
-- that event's hash. `events verify` holds the walked chain to it, so events deleted from the end
-- of the chain, or a chain rewritten whole, are caught too.
SELECT coalesce((SELECT total FROM project_event_counts WHERE project_id = $1), 0)::bigint AS last_sequence,
       (SELECT last_hash FROM project_event_counts WHERE project_id = $1) AS last_hash
