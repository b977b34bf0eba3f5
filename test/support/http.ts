import { exports } from "cloudflare:workers";

let counter = 0;

/**
 * Calls the Worker in workerd as a client would. Each call comes from its own client IP
 * (`CF-Connecting-IP`) unless one is given, so tests of other rules stay under the per-IP limit.
 */
export function call(path: string, init: RequestInit & { ip?: string } = {}): Promise<Response> {
  counter += 1;
  const headers = new Headers(init.headers);
  if (!headers.has("CF-Connecting-IP")) headers.set("CF-Connecting-IP", init.ip ?? `198.51.${(counter >> 8) & 255}.${counter & 255}`);
  return (exports as unknown as { default: Fetcher }).default.fetch(new Request(`http://service.test${path}`, { ...init, headers }));
}

export async function callJson<T = any>(path: string, init?: RequestInit & { ip?: string }): Promise<{ status: number; body: T; response: Response }> {
  const response = await call(path, init);
  return { status: response.status, body: (await response.json()) as T, response };
}
