import type { Hook } from "@hono/zod-openapi";
import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../env";
import { type FieldError, problem } from "./problem";

/** Turns zod issues into the documented `errors: [{path, message}]`. */
export function fieldErrors(issues: readonly { path: readonly PropertyKey[]; message: string }[], prefix?: string): FieldError[] {
  return issues.map((issue) => ({
    path: [prefix, ...issue.path.map(String)].filter((part) => part !== undefined && part !== "").join("."),
    message: issue.message,
  }));
}

/** Every route's validation failure becomes 400 `VALIDATION_FAILED` with `errors`. */
const validationHook: Hook<unknown, AppEnv, string, unknown> = (result) => {
  if (!result.success) {
    const target = "target" in result ? String(result.target) : undefined;
    throw problem("VALIDATION_FAILED", "the request does not match the endpoint's schema", {
      errors: fieldErrors(result.error.issues, target === "json" ? "body" : target),
    });
  }
};

/** A router for one capability; its routes and schemas join the OpenAPI document when mounted. */
export function createRouter(): OpenAPIHono<AppEnv> {
  return new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
}
