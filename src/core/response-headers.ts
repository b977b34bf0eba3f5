import type { Context } from "hono";

/**
 * Sets headers on the response a route produced. Responses that came from elsewhere (a Durable
 * Object's fetch) have immutable headers and are copied first; a WebSocket upgrade (101)
 * cannot be copied and goes out as it is.
 */
export function setResponseHeaders(c: Context, headers: Record<string, string>): void {
  if (c.res.status === 101) return;
  try {
    for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
  } catch {
    c.res = new Response(c.res.body, c.res);
    for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
  }
}
