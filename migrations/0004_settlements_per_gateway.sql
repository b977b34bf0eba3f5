-- Settlements belong to the gateway that reports them: keyed by (gateway, settlement id), so one
-- gateway can never create, advance or block another's. A settlement known only through held
-- events is stored with status 'awaiting'. `writer` marks the batch that last claimed the row
-- (see src/settlements/ledger.ts). Transitions record the sequences a step skipped across a gap.
CREATE TABLE settlements_new (
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
INSERT INTO settlements_new (gateway_id, id, status, sequence, version, chain, asset, amount, fee, tx_hash, block_number, confirmations,
  required_confirmations, from_address, to_address, reference, created_at, updated_at)
  SELECT gateway_id, id, status, sequence, version, chain, asset, amount, fee, tx_hash, block_number, confirmations,
    required_confirmations, from_address, to_address, reference, created_at, updated_at FROM settlements;

CREATE TABLE settlement_transitions_new (
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
INSERT INTO settlement_transitions_new (gateway_id, settlement_id, sequence, from_status, to_status, webhook_id, occurred_at, recorded_at)
  SELECT s.gateway_id, t.settlement_id, t.sequence, t.from_status, t.to_status, t.webhook_id, t.occurred_at, t.recorded_at
  FROM settlement_transitions t JOIN settlements s ON s.id = t.settlement_id;

DROP TABLE settlement_transitions;
DROP TABLE settlements;
ALTER TABLE settlements_new RENAME TO settlements;
ALTER TABLE settlement_transitions_new RENAME TO settlement_transitions;
CREATE INDEX settlements_by_status ON settlements (status, created_at);
CREATE INDEX settlements_by_gateway ON settlements (gateway_id, created_at);

-- Deciding an event reads only small columns, never the held events' raw bodies.
ALTER TABLE gateway_events ADD COLUMN occurred_at INTEGER;
ALTER TABLE gateway_events ADD COLUMN reason TEXT;
UPDATE gateway_events SET occurred_at = json_extract(raw_body, '$.occurredAt');
DROP INDEX gateway_events_by_settlement;
CREATE INDEX gateway_events_by_settlement ON gateway_events (gateway_id, settlement_id, outcome, sequence);
-- The Cron Trigger finds gaps that have held events long enough.
CREATE INDEX gateway_events_held ON gateway_events (received_at) WHERE outcome = 'held';
