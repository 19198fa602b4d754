-- Rides a lane (lib/lanes.ts): a read of a row or a few.
-- The version of the project's feed (domain/feed-pages.ts): its event counter row's, which every
-- transaction that writes or rewrites the project's events moves. No row: no event yet.
SELECT xmin::text AS version FROM project_event_counts WHERE project_id = $1
