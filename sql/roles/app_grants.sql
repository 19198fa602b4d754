-- What `web` and `worker` may do, granted to the group role pms_app by `release` after every
-- migration: read and write the service's rows (ours in public, pg-boss's in pgboss) and nothing
-- more. No CREATE on any schema, no ownership: DDL stays with the role that runs `release`.
GRANT USAGE ON SCHEMA public, pgboss TO pms_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public, pgboss TO pms_app;
GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public, pgboss TO pms_app;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA public, pgboss TO pms_app;
-- Tables pg-boss makes later as this role (a new queue's partition) are covered as they appear.
ALTER DEFAULT PRIVILEGES IN SCHEMA public, pgboss GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO pms_app;
ALTER DEFAULT PRIVILEGES IN SCHEMA public, pgboss GRANT USAGE, SELECT, UPDATE ON SEQUENCES TO pms_app;
