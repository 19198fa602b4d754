-- A disable's first statement: it waits for the changes in flight of the project or consumer it
-- ends, and holds back the next until it commits (sql/migrations/0014).
SELECT hold_changes_of($1, $2)
