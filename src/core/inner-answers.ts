/**
 * Requests the isolate asks its own app (the Binance WebSocket API asks the REST dialect's route,
 * one request a frame): a 200's JSON text is handed over here, not written into the body, so the
 * request leaves no body buffer behind it for the runtime to hold until a full collection — about
 * 80 KB a deep book, measured (docs/benchmarks.md#isolation). Keyed by the request itself and held
 * weakly: a request that is never taken is dropped with it.
 *
 * @example
 * askInner(request);
 * const response = await app.fetch(request, env, ctx);
 * const text = takeInner(request) ?? (await response.text());
 */
const texts = new WeakMap<Request, string | undefined>();

/** Marks `request` as asked from inside the isolate: its 200's JSON text is handed over in memory. */
export function askInner(request: Request): void {
  texts.set(request, undefined);
}

/** Hands `text` to the inner asker of `request`; false when nobody inside asked (the text goes in the body). */
export function handInner(request: Request, text: string): boolean {
  if (!texts.has(request)) return false;
  texts.set(request, text);
  return true;
}

/** The text handed for `request`, if any, and forgets it. */
export function takeInner(request: Request): string | undefined {
  const text = texts.get(request);
  texts.delete(request);
  return text;
}
