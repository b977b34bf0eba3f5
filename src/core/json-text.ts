import type { Context, TypedResponse } from "hono";
import { handInner } from "./inner-answers";

/**
 * A 200 answer whose body is JSON text made elsewhere (a Durable Object that keeps a hot
 * record serialized), typed as the route's response record so the handler stays checked
 * against its OpenAPI entry. Asked from inside the isolate (`inner-answers.ts`), the text is handed
 * over in memory and the body is empty.
 */
export function jsonText<T>(c: Context, text: string, headers: Record<string, string> = {}): Response & TypedResponse<T, 200, "json"> {
  const all = { ...headers, "Content-Type": "application/json" };
  const response = handInner(c.req.raw, text) ? c.body(null, 200, all) : c.body(text, 200, all);
  return response as unknown as Response & TypedResponse<T, 200, "json">;
}
