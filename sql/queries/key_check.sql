-- The check of a known key on its own round trip, for an answer no statement of the request
-- carried it to: 'activated', 'expired', or null (refused). The same rule as a change's BEGIN
-- sends (sql/templates/key_check_begin.sql), without its locks: this answer changes nothing.
SELECT key_usable_status($1, $2) AS key_check
