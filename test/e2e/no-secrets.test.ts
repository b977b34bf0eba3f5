import { createHmac } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { adminToken, issuePublishKey } from "../../scripts/publish-key.mjs";
import { startService } from "../../scripts/service.mjs";
import { until } from "../support/poll";

/**
 * The logs an operator searches hold no secret (docs/operations.md#logs): a service of its own,
 * printing everything the Worker logs (`WRANGLER_LOG=log`), takes requests across the surface and the dashboard
 * flow — sign-ups, keys, signatures good and bad, operator changes, a publisher channel, a
 * settlement callback — and then nothing it printed holds a secret, a signature, a password or a
 * cookie value, while the structured lines for those events are there.
 */
let service: Awaited<ReturnType<typeof startService>>;
beforeAll(async () => {
  service = await startService({ env: { WRANGLER_LOG: "log" } });
}, 180_000);
afterAll(() => service?.stop());

const sign = (secret: string, text: string) => createHmac("sha256", secret).update(text).digest("hex");

describe("no secret in the service's output", () => {
  it("after the whole surface and the dashboard flow, the output holds the events and none of the secrets", async () => {
    const base = service.baseUrl;
    const secrets: [string, string][] = [];
    const keep = (what: string, value: string | null | undefined) => {
      if (!value || value.length < 8) throw new Error(`${what} is missing or too short to look for`);
      secrets.push([what, value]);
    };
    const token = adminToken();
    keep("the admin token", token);
    const operator = { Authorization: `Bearer ${token}`, "Content-Type": "application/json" };

    // An account, its key, a signed read and one with a wrong signature.
    const password = `pw-${crypto.randomUUID()}`;
    keep("a password", password);
    const email = `logs-${crypto.randomUUID().slice(0, 8)}@example.com`;
    const signUp = await fetch(`${base}/account/signup`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ email, password }),
    });
    expect(signUp.status).toBe(201);
    const cookie = signUp.headers.get("Set-Cookie")!.split(";")[0]!;
    keep("a session cookie", cookie.split("=")[1]);
    const key = (await (
      await fetch(`${base}/account/api-keys`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Cookie: cookie },
        body: JSON.stringify({ label: "logs", permissions: ["read", "stream"] }),
      })
    ).json()) as { id: string; secret: string };
    keep("an API key's secret", key.secret);
    const target = "/v1/ticker/24hr?symbol=BTCUSDT";
    const timestamp = String(Date.now());
    const good = sign(key.secret, `${timestamp}\nGET\n${target}\n`);
    keep("a good signature", good);
    expect((await fetch(base + target, { headers: { "X-API-KEY": key.id, "X-TIMESTAMP": timestamp, "X-SIGNATURE": good } })).status).toBe(200);
    const bad = sign("not-the-secret", `${timestamp}\nGET\n${target}\n`);
    keep("a wrong signature", bad);
    expect((await fetch(base + target, { headers: { "X-API-KEY": key.id, "X-TIMESTAMP": timestamp, "X-SIGNATURE": bad } })).status).toBe(401);
    expect((await fetch(`${base}/admin/metrics`, { headers: { Authorization: "Bearer a-guessed-token" } })).status).toBe(401);

    // Operator changes: a publishing key, a gateway, an announcement.
    const publishKey = await issuePublishKey(base, token, { label: "logs feed", markets: "*" });
    keep("a publishing key's secret", publishKey.secret);
    const gatewayAnswer = (await (
      await fetch(`${base}/admin/gateways`, { method: "POST", headers: operator, body: JSON.stringify({ name: "Logs Gateway" }) })
    ).json()) as { id: string; secret: { secret: string } };
    keep("a gateway's webhook secret", gatewayAnswer.secret.secret);
    const announced = await fetch(`${base}/admin/announcements`, {
      method: "POST",
      headers: operator,
      body: JSON.stringify({ kind: "info", title: "logs test" }),
    });
    expect(announced.status).toBe(201);
    await fetch(`${base}/admin/announcements/${((await announced.json()) as { id: string }).id}`, { method: "DELETE", headers: operator });

    // A publisher channel: opened (signed in the query), one batch, closed.
    const at = Date.now();
    const channelSignature = sign(publishKey.secret, `${at}\nGET\n/v1/publish\n`);
    keep("a publisher channel's signature", channelSignature);
    const channel = new WebSocket(`${base.replace(/^http/, "ws")}/v1/publish?apiKey=${publishKey.id}&timestamp=${at}&signature=${channelSignature}`);
    const answered = new Promise<string>((resolve) => channel.on("message", (data) => resolve(String(data))));
    await new Promise((resolve, reject) => channel.on("open", resolve).on("error", reject));
    channel.send(JSON.stringify({ id: 1, symbol: "XRPUSDT", trades: [{ id: `logs-${at}`, price: "0.6000", quantity: "1.0", side: "buy", time: at }] }));
    expect(JSON.parse(await answered)).toMatchObject({ id: 1, result: { acceptedTrades: 1 } });
    channel.close(1000, "done");

    // A settlement callback, signed as a gateway signs it.
    const body = JSON.stringify({
      id: `evt_logs_${at}`,
      type: "settlement.updated",
      gatewayId: gatewayAnswer.id,
      occurredAt: at,
      data: {
        settlementId: "stl_logs",
        sequence: 1,
        status: "pending",
        chain: "eip155:1",
        asset: "USDC",
        amount: "1.000000",
        txHash: "0xabc",
        confirmations: 1,
        requiredConfirmations: 12,
      },
    });
    const seconds = Math.floor(Date.now() / 1000);
    const webhookSignature = new Webhook(gatewayAnswer.secret.secret).sign(`evt_logs_${at}`, new Date(seconds * 1000), body);
    keep("a webhook signature", webhookSignature.split(",")[1]);
    const callback = await fetch(`${base}/api/gateway/callback`, {
      method: "POST",
      body,
      headers: {
        "Content-Type": "application/json",
        "X-GATEWAY-ID": gatewayAnswer.id,
        "webhook-id": `evt_logs_${at}`,
        "webhook-timestamp": String(seconds),
        "webhook-signature": webhookSignature,
      },
    });
    expect(callback.status).toBe(200);

    // The dashboard flow: sign in with the form, create a key with the form's CSRF token.
    const login = await fetch(`${base}/dashboard/login`, {
      method: "POST",
      headers: { "Content-Type": "application/x-www-form-urlencoded", Origin: base },
      body: new URLSearchParams({ email, password }),
      redirect: "manual",
    });
    const dashboardCookie = login.headers.get("Set-Cookie")!.split(";")[0]!;
    keep("a dashboard session cookie", dashboardCookie.split("=")[1]);
    const page = await (await fetch(`${base}/dashboard`, { headers: { Cookie: dashboardCookie } })).text();
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)![1]!;
    keep("a CSRF token", csrf);
    const created = await (
      await fetch(`${base}/dashboard/keys`, {
        method: "POST",
        headers: { "Content-Type": "application/x-www-form-urlencoded", Cookie: dashboardCookie, Origin: base },
        body: new URLSearchParams({ csrf, label: "form key", permissions: "read" }),
      })
    ).text();
    keep("a key made in the dashboard", /id="secret-value">\s*([^<\s]+)/.exec(created)?.[1]);

    // Every GET of the API as documented, with credentials where it takes them.
    const spec = (await (await fetch(`${base}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    let reads = 0;
    for (const [path, operations] of Object.entries(spec.paths)) {
      if (!("get" in operations) || path.endsWith("/ws") || path.includes("/data/")) continue;
      const url = path.replace(/\{pair\}|\{symbol\}/g, "BTCUSDT").replace(/\{[^}]+\}/g, "x");
      const headers: Record<string, string> = path.startsWith("/admin")
        ? { Authorization: `Bearer ${token}` }
        : path.startsWith("/account")
          ? { Cookie: cookie }
          : {};
      await fetch(base + url, { headers: { ...headers, "CF-Connecting-IP": `198.18.170.${reads % 250}` } });
      reads += 1;
    }
    expect(reads, "GET operations called").toBeGreaterThan(30);

    // The structured lines of those events reach the output.
    const events = () =>
      service
        .output()
        .split("\n")
        .flatMap((line) => {
          const json = line.slice(line.indexOf("{"));
          try {
            return [JSON.parse(json) as { event?: string }];
          } catch {
            return [];
          }
        })
        .map((line) => line.event);
    await until(() => events().includes("publish.channel.close"), { timeoutMs: 10_000, what: "the channel's close line" });
    for (const event of ["auth.refused", "operator.change", "publish.channel.open", "publish.channel.close"]) expect(events(), event).toContain(event);

    const output = service.output();
    expect(output.length, "the service printed its log").toBeGreaterThan(1000);
    for (const [what, value] of secrets) expect(output.includes(value), `${what} appears in the service's output`).toBe(false);
  }, 180_000);
});
