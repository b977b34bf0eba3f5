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
