-- A web process's lease of a limited key's window: up to :lease more of its requests, within
-- :cap over all processes (docs/request-limits.md says why that bound holds). No row: none left.
-- `granted` is the window's total after this lease, `leased` what this lease took.
INSERT INTO request_windows AS w (key_id, window_start, granted, last_grant, ends_at)
VALUES (:key_id, :window_start::bigint, least(:lease::int, :cap::int), least(:lease::int, :cap::int), to_timestamp(:window_end::bigint))
ON CONFLICT (key_id, window_start) DO UPDATE
SET granted = w.granted + least(:lease::int, :cap::int - w.granted),
    last_grant = least(:lease::int, :cap::int - w.granted)
WHERE w.granted < :cap::int
RETURNING granted, last_grant AS leased
