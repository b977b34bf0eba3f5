import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { promisify } from "node:util";
import { describe, expect, inject, it } from "vitest";
// @ts-expect-error plain ESM script without types
import { deliver } from "../../scripts/gateway.mjs";

const run = promisify(execFile);
const baseUrl = inject("baseUrl");

function adminToken(): string {
  const line = readFileSync(".dev.vars", "utf8").split("\n").find((l) => l.startsWith("ADMIN_TOKEN="));
  return JSON.parse(line!.slice("ADMIN_TOKEN=".length));
}

async function admin(path: string, init: RequestInit = {}) {
  return fetch(baseUrl + path, { ...init, headers: { Authorization: `Bearer ${adminToken()}`, "Content-Type": "application/json", ...init.headers } });
}

describe("the gateway simulator against the running service", () => {
  it("approve a gateway, send pending → confirming → confirmed → finalized (one duplicated, one out of order), read it back", async () => {
    const approved = (await (await admin("/admin/gateways", { method: "POST", body: JSON.stringify({ name: "Simulator" }) })).json()) as { id: string; secret: { secret: string } };
    const send = (sequence: number, status: string, ...extra: string[]) =>
      run("node", ["scripts/gateway.mjs", "send", "--gateway", approved.id, "--secret", approved.secret.secret, "--settlement", "stl_sim", "--sequence", String(sequence), "--status", status, "--base", baseUrl, ...extra]);
    const first = await send(1, "pending", "--repeat", "2");
    const [once, again] = first.stdout.trim().split("\n").map((line) => JSON.parse(line));
    expect(once).toMatchObject({ outcome: "applied", status: "pending" });
    expect(again).toMatchObject({ outcome: "duplicate", status: "pending" });
    expect(JSON.parse((await send(3, "confirmed")).stdout).outcome).toBe("held");
    expect(JSON.parse((await send(2, "confirming")).stdout)).toMatchObject({ outcome: "applied", status: "confirmed" });
    expect(JSON.parse((await send(4, "finalized")).stdout)).toMatchObject({ outcome: "applied", status: "finalized" });
    const read = (await (await admin("/admin/settlements/stl_sim")).json()) as { settlement: { status: string }; history: { to: string }[] };
    expect(read.settlement.status).toBe("finalized");
    expect(read.history.map((h) => h.to)).toEqual(["pending", "confirming", "confirmed", "finalized"]);
  });

  it("retries a 5xx with back-off and re-signs every attempt with a fresh timestamp", async () => {
    const seen: { timestamp: string; signature: string }[] = [];
    const server = createServer((request, response) => {
      seen.push({ timestamp: String(request.headers["webhook-timestamp"]), signature: String(request.headers["webhook-signature"]) });
      response.writeHead(seen.length < 3 ? 503 : 200, { "Content-Type": "application/json" }).end('{"received":true}');
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    try {
      const result = await deliver({
        base: `http://127.0.0.1:${port}`,
        gatewayId: "gw_x",
        secret: "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3",
        body: { id: "evt_retry", type: "settlement.updated" },
        attempts: 3,
        schedule: [0, 1100, 1100], // the real schedule's shape, shortened; each wait crosses a second
        log: () => undefined,
      });
      expect(result.status).toBe(200);
      expect(seen).toHaveLength(3);
      expect(seen[1]!.timestamp).not.toBe(seen[0]!.timestamp);
      expect(new Set(seen.map((s) => s.signature)).size).toBeGreaterThan(1);
    } finally {
      server.close();
    }
  }, 30_000);
});
