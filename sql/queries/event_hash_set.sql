-- The hashes of events written before the chain existed (release's backfill).
UPDATE events e SET hash = v.hash FROM unnest($1::text[], $2::text[]) AS v(id, hash) WHERE e.id = v.id
