import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";

// Runs before every test file; applyD1Migrations skips what is already applied, and the default
// venue's statements are INSERT OR IGNORE.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);
const statements = env.TEST_DEFAULT_VENUE.split("\n").filter((line) => line.startsWith("INSERT"));
await env.DB.batch(statements.map((sql) => env.DB.prepare(sql)));
