import { createMiddleware } from "hono/factory";
import { setResponseHeaders } from "./response-headers";

/** Incoming ids are echoed only when they are short and printable, so logs stay clean. */
const VALID_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

function chooseRequestId(incoming: string | null | undefined): string {
  return incoming && VALID_REQUEST_ID.test(incoming) ? incoming : crypto.randomUUID();
}

/** Sets `requestId` for handlers and `X-Request-Id` on every response (docs/api.md). */
export const requestId = createMiddleware<{ Variables: { requestId: string } }>(async (c, next) => {
  const id = chooseRequestId(c.req.header("X-Request-Id"));
  c.set("requestId", id);
  await next();
  setResponseHeaders(c, { "X-Request-Id": id });
});
