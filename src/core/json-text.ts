import type { Context, TypedResponse } from "hono";

/** True when a request declares a JSON body (`application/json`, parameters allowed). */
export function isJsonRequest(request: Request): boolean {
  return /^application\/json\s*(;|$)/i.test(request.headers.get("Content-Type") ?? "");
}

/**
 * A 200 answer whose body is JSON text made elsewhere (a Durable Object that keeps a hot
 * record serialized), typed as the route's response record so the handler stays checked
 * against its OpenAPI entry.
 */
export function jsonText<T>(c: Context, text: string): Response & TypedResponse<T, 200, "json"> {
  return c.body(text, 200, { "Content-Type": "application/json" }) as unknown as Response & TypedResponse<T, 200, "json">;
}
