-- What an event's row holds beyond its hash's reach can no longer be changed unseen.
--
-- Its hash: every event keeps the one it was written with (0006 on; the rows of before got theirs
-- from release's backfill, domain/audit-chain.ts). The backfill hashes whatever has no hash, and
-- every workspace command runs release first: without this, an event edited with SQL and its hash
-- set to NULL would be hashed anew over the edit by the next command, `events verify` among them,
-- and the edit blessed.
--
-- Its time: the hash covers `created_at` in whole seconds, as the API shows it, and every writer
-- has stored whole seconds (to_timestamp of the change's Unix seconds); the feed orders by the
-- stored time, so a fraction added with SQL would reorder the events of one second unseen.
--
-- NOT VALID, like events_body_written: both hold for every row written or changed from now on,
-- and a row of before is changed only by the backfill, which gives it its hash.
ALTER TABLE events ADD CONSTRAINT events_hash_written CHECK (hash IS NOT NULL) NOT VALID;
ALTER TABLE events ADD CONSTRAINT events_created_whole_second
  CHECK (extract(epoch FROM created_at) = floor(extract(epoch FROM created_at))) NOT VALID;
