// Starts the service exactly as the README does (`npm start`, with PORT) on a fresh state
// directory and waits until it answers: for the end-to-end tests and for scripts that need the
// live service (the client's types are generated from its /openapi.json).
import { spawn } from "node:child_process";
import { appendFileSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";

/** @returns {Promise<number>} a TCP port free on 127.0.0.1 just now */
function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = /** @type {import("node:net").AddressInfo} */ (server.address());
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

/**
 * `state` and `port` start it again on a state directory a killed one left (a crash test);
 * `kill()` is `kill -9` of its whole process group, leaving the state for that restart.
 * @param {{ env?: Record<string, string>, timeoutMs?: number, state?: string, port?: number }} [options] extra environment (e.g. `--var` is not needed: `npm start` turns the demo feed on)
 * @returns {Promise<{ baseUrl: string, httpsUrl: string, stop: () => Promise<void>, kill: () => Promise<void>, output: () => string, state: string, port: number }>}
 */
export async function startService(options = {}) {
  // A port found free is not held: until the service binds it, another process (another test's
  // service, its HTTPS door, wrangler's inspector) may take it. A fresh start that finds its port
  // taken picks others; a restart on a given port and state has none to pick.
  const fresh = options.port === undefined && options.state === undefined;
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options);
    } catch (error) {
      if (!fresh || attempt >= 3 || !String(error instanceof Error ? error.message : error).includes("Address already in use")) throw error;
    }
  }
}

/** @param {{ env?: Record<string, string>, timeoutMs?: number, state?: string, port?: number }} [options] */
async function startOnce({ env = {}, timeoutMs = 150_000, state: given, port: givenPort } = {}) {
  const port = givenPort ?? (await freePort());
  const httpsPort = await freePort();
  const state = given ?? mkdtempSync(path.join(tmpdir(), "mds-service-"));
  const child = spawn("npm", ["start", "--", "--persist-to", state], {
    cwd: path.resolve(import.meta.dirname, ".."),
    env: { ...process.env, PORT: String(port), HTTPS_PORT: String(httpsPort), WRANGLER_LOG: process.env.SERVICE_LOG ? "info" : "warn", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  // SERVICE_LOG=file keeps everything the service printed, for a failure that needs its side of the story.
  const keep = process.env.SERVICE_LOG ? (chunk) => appendFileSync(process.env.SERVICE_LOG, chunk) : () => {};
  const collect = (chunk) => {
    output += chunk;
    keep(chunk);
  };
  child.stdout?.on("data", collect);
  child.stderr?.on("data", collect);
  const baseUrl = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.pid && child.exitCode === null) {
      try {
        process.kill(-child.pid, "SIGTERM");
      } catch {
        // already gone
      }
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    rmSync(state, { recursive: true, force: true });
  };
  const kill = async () => {
    if (!child.pid || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once("exit", resolve));
    process.kill(-child.pid, "SIGKILL");
    await exited;
  };
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null) {
      await stop();
      throw new Error(`npm start exited with ${child.exitCode}:\n${output}`);
    }
    try {
      if ((await fetch(`${baseUrl}/api/time`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`npm start did not answer within ${timeoutMs / 1000} s:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  // Everything the service printed so far (the no-secrets test reads it).
  return { baseUrl, httpsUrl: `https://127.0.0.1:${httpsPort}`, stop, kill, output: () => output, state, port };
}
