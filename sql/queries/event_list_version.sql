-- The version of the project's feed (domain/feed-pages.ts): its event counter row's, which every
-- transaction that writes, rewrites or deletes the project's events moves (event_chain_lock.sql,
-- sql/migrations/0019), with the head it records (feed_version, 0019). No row: no event yet.
SELECT feed_version(xmin, total, last_hash) AS version
FROM project_event_counts WHERE project_id = $1
