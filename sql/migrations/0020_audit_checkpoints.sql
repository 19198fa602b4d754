-- Signed checkpoints of each project's chain head, and every key that ever signed one: a
-- checkpoint a third party kept stays checkable after the service moves to a new key.
CREATE TABLE audit_signing_keys (
  id          text PRIMARY KEY,          -- hex SHA-256 of the raw public key
  public_key  text NOT NULL,             -- base64 of the raw 32-byte Ed25519 public key
  created_at  bigint NOT NULL            -- Unix seconds
);

CREATE TABLE audit_checkpoints (
  project_id  text NOT NULL REFERENCES projects (id),
  sequence    bigint NOT NULL,
  hash        text NOT NULL,
  created_at  bigint NOT NULL,           -- Unix seconds, as signed
  key_id      text NOT NULL REFERENCES audit_signing_keys (id),
  signature   text NOT NULL,             -- base64 Ed25519 signature
  PRIMARY KEY (project_id, sequence)
);
