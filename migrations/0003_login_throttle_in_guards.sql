-- The sign-in throttle moved into the AccessGuard objects (one writer per account and per client
-- address, so concurrent attempts cannot race past it); its D1 table is no longer read.
DROP TABLE IF EXISTS login_failures;
