-- Whether a delivery is due, or an enabled endpoint has events or a replay to queue (the sweep).
SELECT EXISTS (SELECT 1 FROM webhook_deliveries WHERE next_at <= now())
    OR EXISTS (
      SELECT 1 FROM webhook_endpoints e
      JOIN project_event_counts c ON c.project_id = e.project_id
      WHERE e.status = 'enabled' AND e.deleted_at IS NULL AND (e.fanned_out < c.total OR e.replay_to IS NOT NULL)
    ) AS pending
