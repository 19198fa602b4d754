-- Where a key lives, by its secret's hash alone: for secrets made before they carried their
-- project (domain/secrets.ts), whose lookup must find the project first. Here a view of the keys;
-- on Citus a reference table of the keys there were when release distributed them (docs/citus.md).
CREATE VIEW api_key_routes AS SELECT secret_hash, project_id FROM api_keys;
