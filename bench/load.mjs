// Load-generation helpers shared by the HTTP bench and the profiler.
import autocannon from "autocannon";

export const CONNECTIONS = 32;

/** FNV-1a of a text, as src/streams/placement.ts hashes a principal to pick its shard. */
export function fnv1a(text) {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** The value after `--name` on the command line, or `fallback`. */
export function option(name, fallback) {
  const args = process.argv.slice(2);
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : fallback;
}

/**
 * Client addresses (`CF-Connecting-IP`) handed out round-robin, so each stays far under the
 * public limit of 10 requests a second: 1,024 of them carry ~10,000 req/s before any nears it.
 */
export function clientIps(count = 1024, prefix = 20) {
  let n = 0;
  return () => {
    n = (n + 1) % count;
    return `10.${prefix + (n >> 8)}.${n & 255}.7`;
  };
}

/** The public routes' request hook: every request from the next client address. */
export function fromManyIps(nextIp) {
  return (request) => ({ ...request, headers: { ...request.headers, "CF-Connecting-IP": nextIp() } });
}

/** Every request from the same client address: a flood far over its limit. */
export function fromOneIp(ip) {
  return (request) => ({ ...request, headers: { ...request.headers, "CF-Connecting-IP": ip } });
}

/** Waits until the demo feed has produced prices and a traded BTCUSDT market (first request starts it). */
export async function warmUp(url, nextIp, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const headers = { "CF-Connecting-IP": nextIp() };
    const prices = await (await fetch(`${url}/api/prices`, { headers })).json().catch(() => ({}));
    const ticker = await (await fetch(`${url}/api/ticker/BTCUSDT`, { headers: { "CF-Connecting-IP": nextIp() } })).json().catch(() => ({}));
    const book = await (await fetch(`${url}/api/orderbook/BTCUSDT?depth=100`, { headers: { "CF-Connecting-IP": nextIp() } })).json().catch(() => ({}));
    if (prices.data?.length > 0 && Number(ticker.volume24h) > 0 && book.bids?.length >= 20) return { prices, ticker, book };
    if (Date.now() > deadline)
      throw new Error(`the service did not warm up within ${timeoutMs} ms (prices ${prices.data?.length ?? "none"}, ticker volume ${ticker.volume24h})`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/** One autocannon run; resolves with its result. */
export function load({ url, seconds, setupRequest, connections = CONNECTIONS }) {
  return new Promise((resolve, reject) => {
    autocannon({ url, connections, duration: seconds, requests: [{ setupRequest }] }, (error, result) => (error ? reject(error) : resolve(result)));
  });
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

/**
 * Makes one request from each of `count` client addresses, 32 at a time, so every address's
 * AccessGuard exists before measuring: creating a Durable Object (its SQLite file) is a
 * one-off cost of several milliseconds locally that would otherwise land in the first round.
 */
export async function touchClients(url, nextIp, count = 1024, path = "/api/time") {
  const queue = Array.from({ length: count }, () => nextIp());
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      for (let ip = queue.pop(); ip !== undefined; ip = queue.pop()) await (await fetch(url + path, { headers: { "CF-Connecting-IP": ip } })).arrayBuffer();
    }),
  );
}

/** p-th percentile of `values` (ms, to a tenth), or null when there are none. */
export function percentile(values, p) {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] * 10) / 10;
}
