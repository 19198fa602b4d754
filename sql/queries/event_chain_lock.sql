-- Takes the chain heads of a batch's projects ($1, sorted), making the head of a project's first
-- event. Rows are locked in project order, so two writers never wait on each other in a cycle;
-- while a writer holds a project's head no other numbers that project's events. The update (of
-- nothing) also moves the row's version, which the web processes' kept feed pages are read at
-- (domain/feed-pages.ts): a DO NOTHING here would keep a page the batch has outdated.
INSERT INTO project_event_counts AS c (project_id)
SELECT DISTINCT p FROM unnest($1::text[]) AS p ORDER BY p
ON CONFLICT (project_id) DO UPDATE SET total = c.total
RETURNING c.project_id, c.total AS last_sequence, c.last_hash
