-- The service's D1 schema: what people and gateways own, and the market registry. One file: no
-- deployment holds an earlier layout. A later change is a new numbered migration beside it.

-- Accounts, sessions and the API-key index shown in the dashboard. Key secrets are not here:
-- each key's AccessGuard holds it, sealed (AES-256-GCM).
CREATE TABLE accounts (
  id TEXT PRIMARY KEY,
  email TEXT NOT NULL UNIQUE,
  password_hash TEXT NOT NULL,
  password_salt TEXT NOT NULL,
  created_at INTEGER NOT NULL
);

CREATE TABLE sessions (
  id_hash TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  csrf_token TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX sessions_by_account ON sessions (account_id);

-- An account key reads and streams; only operator-issued keys (publish_keys) publish.
CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  account_id TEXT NOT NULL REFERENCES accounts (id),
  label TEXT NOT NULL,
  permissions TEXT NOT NULL,
  allow_cidrs TEXT NOT NULL,
  expires_at INTEGER,
  created_at INTEGER NOT NULL,
  revoked_at INTEGER
);
CREATE INDEX api_keys_by_account ON api_keys (account_id, created_at);

-- Settlement callbacks from approved blockchain gateways (docs/settlements.md).
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
-- wrote the row from a concurrent duplicate. Deciding an event reads only the small columns
-- (`occurred_at`, `reason`), never the held events' raw bodies.
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
  occurred_at INTEGER,
  reason TEXT,
  PRIMARY KEY (gateway_id, webhook_id)
);
CREATE INDEX gateway_events_by_settlement ON gateway_events (gateway_id, settlement_id, outcome, sequence);
-- The Cron Trigger finds gaps that have held events long enough.
CREATE INDEX gateway_events_held ON gateway_events (received_at) WHERE outcome = 'held';

-- Settlements belong to the gateway that reports them: keyed by (gateway, settlement id), so one
-- gateway can never create, advance or block another's. A settlement known only through held
-- events is stored with status 'awaiting'. `sequence` is the last sequence processed, `version`
-- guards concurrent writers, `writer` marks the batch that last claimed the row
-- (src/settlements/ledger.ts).
CREATE TABLE settlements (
  gateway_id TEXT NOT NULL,
  id TEXT NOT NULL,
  status TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  version INTEGER NOT NULL,
  writer TEXT,
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
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (gateway_id, id)
);
CREATE INDEX settlements_by_status ON settlements (status, created_at);
CREATE INDEX settlements_by_gateway ON settlements (gateway_id, created_at);

-- Append-only history: one row per applied transition, never edited; `skipped_from` records the
-- sequences a step skipped across a gap.
CREATE TABLE settlement_transitions (
  gateway_id TEXT NOT NULL,
  settlement_id TEXT NOT NULL,
  sequence INTEGER NOT NULL,
  from_status TEXT,
  to_status TEXT NOT NULL,
  webhook_id TEXT NOT NULL,
  occurred_at INTEGER NOT NULL,
  recorded_at INTEGER NOT NULL,
  skipped_from INTEGER,
  PRIMARY KEY (gateway_id, settlement_id, sequence)
);

-- The market registry (docs/operations.md#listing-markets): assets and markets are data an
-- operator lists through /admin. D1 is the system of record; the Registry Durable Object
-- publishes it to every isolate as a versioned copy, so no market-data request reads these tables.
CREATE TABLE assets (
  asset TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  decimals INTEGER NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('ACTIVE', 'INACTIVE')),
  listed_at INTEGER NOT NULL
);

-- Scales are fixed at listing (a market's stored units are at them); rules and status change,
-- each change bumping `revision`. `ordinal` is the listing order: it orders the registry and
-- puts the market in its group (ordinal / 64).
CREATE TABLE markets (
  symbol TEXT PRIMARY KEY,
  base TEXT NOT NULL REFERENCES assets (asset),
  quote TEXT NOT NULL REFERENCES assets (asset),
  price_scale INTEGER NOT NULL,
  quantity_scale INTEGER NOT NULL,
  tick_size TEXT NOT NULL,
  step_size TEXT NOT NULL,
  min_qty TEXT NOT NULL,
  max_qty TEXT NOT NULL,
  min_notional TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('TRADING', 'HALTED', 'DELISTED')),
  ordinal INTEGER NOT NULL UNIQUE,
  revision INTEGER NOT NULL,
  listed_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

-- One row: bumped in the same batch as every registry change, so a copy knows it is behind.
CREATE TABLE registry_version (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  version INTEGER NOT NULL
);
INSERT INTO registry_version (id, version) VALUES (1, 1);

-- Publishing keys are issued by the operator, each limited to its markets (a JSON array of
-- symbols, or "*") (docs/operations.md#publish-keys). As with account keys, the secret is not
-- here: the key's AccessGuard holds it sealed.
CREATE TABLE publish_keys (
  id TEXT PRIMARY KEY,
  label TEXT NOT NULL,
  markets TEXT NOT NULL,
  allow_cidrs TEXT NOT NULL,
  expires_at INTEGER,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  revoked_at INTEGER
);

-- Every operator change, written in the same batch as the change itself: a change never lands
-- without its record (docs/operations.md#audit-log). `operator` is the credential's id (a digest
-- prefix), never the token.
CREATE TABLE audit_log (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  at INTEGER NOT NULL,
  operator TEXT NOT NULL,
  route TEXT NOT NULL,
  action TEXT NOT NULL,
  target TEXT NOT NULL,
  change TEXT NOT NULL
);
CREATE INDEX audit_log_by_time ON audit_log (at, id);

-- The closed segments of each market's book history, as their host put them in R2
-- (docs/history.md#book-history): what each covers and where its checkpointed blocks lie
-- (`[offset, base sequence, base time]` a block), so an isolate or a stream shard reads closed
-- history straight from R2 without asking the market's host. A row a segment, written once.
CREATE TABLE book_segments (
  symbol TEXT NOT NULL,
  base_seq INTEGER NOT NULL,
  last_seq INTEGER NOT NULL,
  first_time INTEGER NOT NULL,
  last_time INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  blocks TEXT NOT NULL,
  PRIMARY KEY (symbol, base_seq)
) WITHOUT ROWID;
CREATE INDEX book_segments_by_time ON book_segments (symbol, first_time);
