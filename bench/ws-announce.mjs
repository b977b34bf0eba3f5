// `npm run bench:ws -- --announce [-- --clients 1000] [-- --json]`
//
// How long an operator's announcement takes to reach every connected client
// (docs/operations.md#announcements): N clients on the `status` stream through `/api/ws`, five
// per client address, spread over the shards as real users are; then one maintenance announced
// through the operator API. Reported: from sending the announcement to each client's receipt of
// the new status (one clock: the bench's), p50, p99 and the slowest, and how many never got it
// within 5 s. On workerd via Miniflare, each Worker on its own socket; loopback only, bounded.
import { median } from "./load.mjs";

const TARGET_MS = 5_000;

function percentile(sorted, q) {
  return sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
}

/** Runs the measurement against a fresh service; returns the report. */
export async function measureAnnouncement({ clients: count, log, connectAll }) {
  const { default: WebSocket } = await import("ws");
  const { bundleService, startService } = await import("./service.mjs");
  log(`bundling; ${count} clients on the status stream, then one announcement`);
  const service = await startService(bundleService(true), { DEMO_FEED: "off" }, { direct: true });
  const received = new Map();
  let sentAt = 0;
  try {
    const wsBase = service.url.replace("http", "ws");
    const clients = await connectAll(
      WebSocket,
      () => `${wsBase}/api/ws?streams=status`,
      count,
      (socket, n) => {
        const client = { n, first: false };
        socket.on("message", (data) => {
          const message = JSON.parse(String(data));
          if (message.stream !== "status") return;
          if (!client.first) client.first = true;
          else if (message.data.status === "maintenance" && !received.has(n)) received.set(n, performance.timeOrigin + performance.now() - sentAt);
        });
        return { client, socket };
      },
    );
    for (let i = 0; i < 100 && clients.some((c) => !c.client.first); i++) await new Promise((resolve) => setTimeout(resolve, 100));
    log(`${clients.length} clients connected, each with the status; announcing…`);
    sentAt = performance.timeOrigin + performance.now();
    const answer = await fetch(`${service.url}/admin/announcements`, {
      method: "POST",
      headers: { Authorization: "Bearer bench-admin-token", "Content-Type": "application/json", "CF-Connecting-IP": "10.250.0.9" },
      body: JSON.stringify({ kind: "maintenance", title: "bench", endsAt: Date.now() + 600_000 }),
    });
    if (answer.status !== 201) throw new Error(`the announcement answered ${answer.status}: ${await answer.text()}`);
    const answeredMs = performance.timeOrigin + performance.now() - sentAt;
    for (let i = 0; i < TARGET_MS / 50 && received.size < clients.length; i++) await new Promise((resolve) => setTimeout(resolve, 50));
    for (const { socket } of clients) socket.terminate();
    const times = [...received.values()].sort((a, b) => a - b);
    return {
      clients: clients.length,
      received: times.length,
      missing: clients.length - times.length,
      answeredMs: Math.round(answeredMs),
      p50Ms: times.length === 0 ? 0 : Math.round(median(times)),
      p99Ms: Math.round(percentile(times, 0.99) ?? 0),
      maxMs: Math.round(times[times.length - 1] ?? 0),
      targetMs: TARGET_MS,
    };
  } finally {
    await service.mf.dispose();
  }
}
