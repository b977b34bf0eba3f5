// `npm run test:model [-- --seeds 10000]`: the model-based tests (test/model/) with that many runs
// of random commands (CI runs a bounded few with `npm test`). Prints the time the runs took; a
// failure prints its seed and its shrunk commands.
import { spawnSync } from "node:child_process";
import path from "node:path";

const at = process.argv.indexOf("--seeds");
const seeds = at === -1 ? 200 : Number(process.argv[at + 1]);
if (!Number.isSafeInteger(seeds) || seeds < 1) {
  console.error("--seeds takes a positive whole number");
  process.exit(2);
}
const started = Date.now();
const result = spawnSync(path.join("node_modules", ".bin", "vitest"), ["run", "--project", "model"], {
  cwd: path.resolve(import.meta.dirname, ".."),
  stdio: "inherit",
  // About 30 commands a run, each a few calls of the service: a run's time limit grows with the runs.
  env: { ...process.env, MODEL_RUNS: String(seeds), MODEL_TIMEOUT_MS: String(Math.max(180_000, seeds * 5_000)) },
});
console.log(`${seeds} runs of the model: ${Math.round((Date.now() - started) / 1000)} s, ${result.status === 0 ? "nothing found" : "FAILED"}`);
process.exit(result.status ?? 1);
