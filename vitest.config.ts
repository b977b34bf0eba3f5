import { readFileSync } from "node:fs";
import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

/**
 * A test's time limit only catches a hang: every test's work is bounded by its own counts (runs,
 * requests, batches), and on this shared 2-core machine a property of 300 requests that takes 3 s
 * one day took 6 s another (the default of 5 s failed it in CI, 2026-11-28).
 */
const HANG_MS = 60_000;

const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));
// The seven default markets, as `npm start` lists them (scripts/default-venue.sql).
const defaultVenue = readFileSync(path.join(import.meta.dirname, "scripts/default-venue.sql"), "utf8");

/** Unit and integration tests run inside workerd with real KV, Durable Objects and D1. */
const inWorkerd = (extra: Record<string, string> = {}) =>
  cloudflareTest({
    wrangler: { configPath: "./wrangler.toml" },
    miniflare: {
      // Tests drive the demo feed themselves, so data stays deterministic.
      bindings: {
        TEST_MIGRATIONS: migrations,
        TEST_DEFAULT_VENUE: defaultVenue,
        // As `npm start`: a listing is adopted at once by the isolate that made it (every test
        // file runs in an isolate of its own); the bound itself is tested with a clock.
        REGISTRY_REFRESH_MS: "1000",
        DEMO_FEED: "off",
        // Reads see every write at once (test/integration/edge-reads.test.ts sets its own bound).
        MARKET_READ_MAX_AGE_MS: "0",
        VENUE_READ_MAX_AGE_MS: "0",
        SEALING_KEY: "dGVzdC1zZWFsaW5nLWtleS0zMi1ieXRlcy1sb25nISE=",
        ADMIN_TOKEN: "test-admin-token",
        // Chunks of 100 trades, so the trade archive's paths run on a test's few hundred trades.
        TRADE_ARCHIVE_CHUNK: "100",
        // A page a step, so a test's day of a few hundred trades is built in several pieces.
        DAILY_STEP_PAGES: "1",
        // Each batch written at once, as the tests' sequences of batches expect; the tick itself
        // is tested by test/integration/ingest-tick.test.ts, and runs in e2e and the benchmarks.
        INGEST_TICK_MS: "0",
        // A session closed once no call is under way (an eviction waits for an open one, and the
        // tests evict); test/integration/rpc-sessions.test.ts keeps them open as deployed.
        SESSION_IDLE_MS: "0",
        // A replay's unread pause ends it in half a second here (60 s as deployed).
        REPLAY_READ_WAIT_MS: "500",
        // An address's WebSocket API answers: 64 KiB a minute here (4 MiB as deployed), so a test can fill it.
        WS_API_ANSWER_BYTES: "65536",
        ...extra,
      },
    },
  });

export default defineConfig({
  test: {
    reporters: ["default", "./test/summary-reporter.ts"],
    // Two workerd test runtimes at once (one a core): vitest's default here is one, and the files
    // wait mostly on their runtime's start and on one thread each.
    maxWorkers: 2,
    projects: [
      {
        // Pure logic: one workerd for every file (a runtime of its own per file cost ~3 s each,
        // more than the files' tests together). Nothing here keeps state between files.
        plugins: [inWorkerd()],
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts", "client/test/**/*.test.ts"],
          testTimeout: HANG_MS,
          setupFiles: ["test/integration/apply-migrations.ts"],
          isolate: false,
        },
      },
      {
        plugins: [inWorkerd()],
        test: {
          name: "workers",
          include: ["test/integration/**/*.test.ts"],
          testTimeout: HANG_MS,
          setupFiles: ["test/integration/apply-migrations.ts"],
        },
      },
      {
        // The write path against its model (test/model/): a bounded number of runs here,
        // MODEL_RUNS of them from `npm run test:model -- --seeds N`.
        plugins: [inWorkerd({ MODEL_RUNS: process.env.MODEL_RUNS ?? "40" })],
        test: {
          name: "model",
          include: ["test/model/**/*.test.ts"],
          testTimeout: Number(process.env.MODEL_TIMEOUT_MS ?? HANG_MS * 3),
          setupFiles: ["test/integration/apply-migrations.ts"],
        },
      },
      {
        // End-to-end tests start the service as the README does and talk to it from Node.
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          environment: "node",
          globalSetup: ["test/e2e/global-setup.ts"],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          fileParallelism: false,
          // After the others, alone: the service is timed against its own limits, not the test runtimes.
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
