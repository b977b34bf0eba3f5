-- The trust issue (docs/security.md, docs/operations.md#publish-keys, docs/operations.md#audit-log).

-- Publishing keys are issued by the operator, each limited to its markets (a JSON array of
-- symbols, or "*"). As with account keys, the secret is not here: the key's AccessGuard holds it sealed.
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
-- without its record. `operator` is the credential's id (a digest prefix), never the token.
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

-- Account keys lose `publish` (a contract change, docs/versioning.md): only operator-issued keys publish.
UPDATE api_keys
SET permissions = trim(replace(',' || permissions || ',', ',publish,', ','), ',')
WHERE ',' || permissions || ',' LIKE '%,publish,%';
