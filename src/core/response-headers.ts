import type { Context } from "hono";

/**
 * Sets headers on the response a route produced. Responses that came from elsewhere (a Durable
 * Object's fetch) have immutable headers and are copied first; a WebSocket upgrade (101)
 * cannot be copied and goes out as it is.
 */
export function setResponseHeaders(c: Context, headers: Record<string, string>): void {
  if (c.res.status === 101) return;
  try {
    setAll(c.res.headers, headers);
  } catch {
    c.res = new Response(c.res.body, c.res);
    setAll(c.res.headers, headers);
  }
}

// The Headers object is fetched once: each `c.res.headers` is two getters, one of them the runtime's.
function setAll(target: Headers, headers: Record<string, string>): void {
  for (const name in headers) target.set(name, headers[name] as string);
}
