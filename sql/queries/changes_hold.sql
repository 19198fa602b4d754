-- A disable's first statement: it waits for the changes in flight of the project or consumer it
-- ends, and holds back the next until it commits (sql/migrations/0014). Taken through the rows of
-- the projects concerned (the project, or the consumer's), so that on Citus it is taken on the
-- nodes where those projects' changes take theirs (docs/citus.md).
SELECT hold_changes_of($1, $2, p.id)
FROM projects p
WHERE p.id = $2 OR p.id IN (SELECT m.project_id FROM memberships m WHERE m.consumer_id = $2)
