-- What an event's row holds beyond its hash's reach can no longer be changed unseen: a hash set to
-- NULL would be re-hashed over an SQL edit by the next release's backfill, blessing the edit; and
-- a fraction added to `created_at` (the hash covers whole seconds) would reorder the feed.
-- NOT VALID: both hold for rows written or changed from now on; old rows change only by backfill.
ALTER TABLE events ADD CONSTRAINT events_hash_written CHECK (hash IS NOT NULL) NOT VALID;
ALTER TABLE events ADD CONSTRAINT events_created_whole_second
  CHECK (extract(epoch FROM created_at) = floor(extract(epoch FROM created_at))) NOT VALID;
