import type { Context, TypedResponse } from "hono";

/**
 * A 200 answer whose body is JSON text made elsewhere (a Durable Object that keeps a hot
 * record serialized), typed as the route's response record so the handler stays checked
 * against its OpenAPI entry.
 */
export function jsonText<T>(c: Context, text: string, headers: Record<string, string> = {}): Response & TypedResponse<T, 200, "json"> {
  return c.body(text, 200, { ...headers, "Content-Type": "application/json" }) as unknown as Response & TypedResponse<T, 200, "json">;
}
