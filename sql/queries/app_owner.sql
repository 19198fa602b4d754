-- The project an app belongs to, deleted or not (the totals job's app may be either), by id alone:
-- on Citus every shard is asked, off any request's path (docs/citus.md).
SELECT project_id FROM apps WHERE id = $1
