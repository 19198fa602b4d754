-- The kept answers of requests sent with an Idempotency-Key, by calling key: written in the same
-- transaction as the change they answer, sealed (they may hold a key's secret), kept 24 hours.
CREATE TABLE idempotent_requests (
  key_id           text NOT NULL,
  idempotency_key  text NOT NULL,
  fingerprint      text NOT NULL,
  status           integer NOT NULL,
  sealed_response  text NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (key_id, idempotency_key)
);
CREATE INDEX idempotent_requests_created_at ON idempotent_requests (created_at);
