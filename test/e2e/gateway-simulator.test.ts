import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer } from "node:http";
import { promisify } from "node:util";
import { describe, expect, inject, it } from "vitest";
import { deliver, signWebhook } from "../../scripts/gateway.mjs";
import { adminToken } from "../../scripts/publish-key.mjs";

const run = promisify(execFile);

/** A stand-in service on a free local port that answers with `reply` and records what came. */
async function fakeService(reply: (attempt: number, response: ServerResponse, request: IncomingMessage) => void) {
  const seen: { at: number; timestamp: string; signature: string }[] = [];
  const server = createServer((request, response) => {
    seen.push({ at: Date.now(), timestamp: String(request.headers["webhook-timestamp"]), signature: String(request.headers["webhook-signature"]) });
    reply(seen.length, response, request);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return { base: `http://127.0.0.1:${port}`, seen, close: () => new Promise((resolve) => server.close(resolve)) };
}
const baseUrl = inject("baseUrl");

async function admin(path: string, init: RequestInit = {}) {
  return fetch(baseUrl + path, { ...init, headers: { Authorization: `Bearer ${adminToken()}`, "Content-Type": "application/json", ...init.headers } });
}

describe("the gateway simulator against the running service", () => {
  it("approve a gateway, send pending → confirming → confirmed → finalized (one duplicated, one out of order), read it back", async () => {
    const approved = (await (await admin("/admin/gateways", { method: "POST", body: JSON.stringify({ name: "Simulator" }) })).json()) as {
      id: string;
      secret: { secret: string };
    };
    const send = (sequence: number, status: string, ...extra: string[]) =>
      run("node", [
        "scripts/gateway.mjs",
        "send",
        "--gateway",
        approved.id,
        "--secret",
        approved.secret.secret,
        "--settlement",
        "stl_sim",
        "--sequence",
        String(sequence),
        "--status",
        status,
        "--base",
        baseUrl,
        ...extra,
      ]);
    const first = await send(1, "pending", "--repeat", "2");
    const [once, again] = first.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line));
    expect(once).toMatchObject({ outcome: "applied", status: "pending" });
    expect(again).toMatchObject({ outcome: "duplicate", status: "pending" });
    expect(JSON.parse((await send(3, "confirmed")).stdout).outcome).toBe("held");
    expect(JSON.parse((await send(2, "confirming")).stdout)).toMatchObject({ outcome: "applied", status: "confirmed" });
    expect(JSON.parse((await send(4, "finalized")).stdout)).toMatchObject({ outcome: "applied", status: "finalized" });
    const read = (await (await admin(`/admin/gateways/${approved.id}/settlements/stl_sim`)).json()) as {
      settlement: { status: string };
      history: { to: string }[];
    };
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

  it("signs exactly like the documented webhook vector", () => {
    const vectors = JSON.parse(readFileSync("test/fixtures/signing-vectors.json", "utf8")) as {
      webhookSigning: { secret: string; webhookId: string; webhookTimestamp: number; body: string; webhookSignature: string }[];
    };
    for (const v of vectors.webhookSigning) expect(signWebhook(v.secret, v.webhookId, String(v.webhookTimestamp), v.body)).toBe(v.webhookSignature);
  });

  it("waits at least a 429's Retry-After before the next attempt", async () => {
    const service = await fakeService((attempt, response) =>
      attempt === 1
        ? response.writeHead(429, { "Retry-After": "1", "Content-Type": "application/problem+json" }).end('{"code":"RATE_LIMITED"}')
        : response.writeHead(200).end('{"received":true}'),
    );
    try {
      const result = await deliver({
        base: service.base,
        gatewayId: "gw_x",
        secret: "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3",
        body: { id: "evt_429" },
        attempts: 2,
        schedule: [0, 0],
        log: () => undefined,
      });
      expect(result.status).toBe(200);
      expect(service.seen[1]!.at - service.seen[0]!.at).toBeGreaterThanOrEqual(1000);
    } finally {
      await service.close();
    }
  }, 30_000);

  it("exit code: 0 delivered, 1 refused for good (4xx), 2 out of attempts (5xx)", async () => {
    const statusOf = async (code: number) => {
      const service = await fakeService((_, response) => response.writeHead(code).end("{}"));
      try {
        const args = [
          "scripts/gateway.mjs",
          "send",
          "--gateway",
          "gw_x",
          "--secret",
          "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3",
          "--settlement",
          "stl_x",
          "--sequence",
          "1",
          "--status",
          "pending",
        ];
        const result = await run("node", [...args, "--base", service.base, "--attempts", "2", "--backoff-scale", "0"]).then(
          () => 0,
          (error: { code: number }) => error.code,
        );
        return { exit: result, attempts: service.seen.length };
      } finally {
        await service.close();
      }
    };
    expect(await statusOf(200)).toEqual({ exit: 0, attempts: 1 });
    expect(await statusOf(409)).toEqual({ exit: 1, attempts: 1 });
    expect(await statusOf(503)).toEqual({ exit: 2, attempts: 2 });
  }, 30_000);
});
