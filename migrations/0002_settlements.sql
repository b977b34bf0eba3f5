-- Settlement callbacks from approved blockchain gateways (contract section 7).
CREATE TABLE gateways (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('active', 'revoked')),
  created_at INTEGER NOT NULL,
  revoked_at INTEGER
);

-- At most two active secrets per gateway (rotation); stored sealed (AES-256-GCM).
CREATE TABLE gateway_secrets (
  id TEXT PRIMARY KEY,
  gateway_id TEXT NOT NULL REFERENCES gateways (id),
  sealed_secret TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('active', 'retired')),
  created_at INTEGER NOT NULL,
  retired_at INTEGER
);
CREATE INDEX gateway_secrets_by_gateway ON gateway_secrets (gateway_id, status);

-- Every verified event, permanently, with its raw body. `delivery_id` tells the request that
-- wrote the row from a concurrent duplicate.
CREATE TABLE gateway_events (
  gateway_id TEXT NOT NULL,
  webhook_id TEXT NOT NULL,
  body_sha256 TEXT NOT NULL,
  raw_body TEXT NOT NULL,
  received_at INTEGER NOT NULL,
  settlement_id TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  status TEXT NOT NULL,
  outcome TEXT NOT NULL CHECK (outcome IN ('applied', 'stale', 'quarantined', 'held')),
  delivery_id TEXT NOT NULL,
  PRIMARY KEY (gateway_id, webhook_id)
);
CREATE INDEX gateway_events_by_settlement ON gateway_events (settlement_id, outcome, sequence);

-- Current state; `sequence` is the last sequence processed, `version` guards concurrent writers.
CREATE TABLE settlements (
  id TEXT PRIMARY KEY,
  gateway_id TEXT NOT NULL,
  status TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  version INTEGER NOT NULL,
  chain TEXT,
  asset TEXT,
  amount TEXT,
  fee TEXT,
  tx_hash TEXT,
  block_number INTEGER,
  confirmations INTEGER,
  required_confirmations INTEGER,
  from_address TEXT,
  to_address TEXT,
  reference TEXT,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX settlements_by_status ON settlements (status, created_at);
CREATE INDEX settlements_by_gateway ON settlements (gateway_id, created_at);

-- Append-only history: one row per applied transition, never edited.
CREATE TABLE settlement_transitions (
  settlement_id TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  from_status TEXT,
  to_status TEXT NOT NULL,
  webhook_id TEXT NOT NULL,
  occurred_at INTEGER NOT NULL,
  recorded_at INTEGER NOT NULL,
  PRIMARY KEY (settlement_id, sequence)
);
