import type { Context } from "hono";
import type { BodyData, ParseBodyOptions } from "hono/utils/body";
import { isFormRequest } from "./media-types";
import { problem } from "./problem";

/**
 * The fields of an HTML form post. Anything but form data is 415 `UNSUPPORTED_MEDIA_TYPE`, and
 * form data that does not parse (a broken multipart boundary, say) is 400 `VALIDATION_FAILED`:
 * the sender's mistake, never a 500.
 *
 * @example
 * const form = await readForm(c);
 * const email = typeof form.email === "string" ? form.email : "";
 */
export async function readForm<T extends Partial<ParseBodyOptions>>(c: Context, options?: T): Promise<BodyData<T>> {
  if (!isFormRequest(c.req.raw)) {
    throw problem("UNSUPPORTED_MEDIA_TYPE", "send the form as application/x-www-form-urlencoded or multipart/form-data");
  }
  try {
    return await c.req.parseBody<T, BodyData<T>>(options);
  } catch {
    throw problem("VALIDATION_FAILED", "the form data is malformed", { errors: [{ path: "body", message: "cannot be parsed as form data" }] });
  }
}
