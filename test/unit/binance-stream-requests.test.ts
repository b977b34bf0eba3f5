import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { BINANCE_MAX_STREAMS, parseBinanceRequest } from "../../src/binance/streams";

const METHODS = ["SUBSCRIBE", "UNSUBSCRIBE", "LIST_SUBSCRIPTIONS", "SET_PROPERTY", "GET_PROPERTY"];

/** Ids Binance takes (an integer, or up to 36 letters, digits and dashes, or none) and ids it does not. */
const id = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.integer(),
  fc.stringMatching(/^[A-Za-z0-9-]{1,36}$/),
  fc.constantFrom(1.5, -0, 2 ** 60, "", "a b", "x".repeat(37), "é"),
  fc.constantFrom({}, [], true),
);
const method = fc.oneof(
  fc.constantFrom(...METHODS),
  fc.constant(undefined),
  fc.constantFrom("subscribe", "PING", "", "toString"),
  fc.jsonValue({ maxDepth: 1 }),
);
const params = fc.oneof(
  fc.constant(undefined),
  fc.array(fc.string({ maxLength: 12 }), { maxLength: 4 }),
  fc.constant(Array.from({ length: BINANCE_MAX_STREAMS + 1 }, (_, i) => `s${i}@trade`)),
  fc.tuple(fc.constantFrom("combined", "other"), fc.oneof(fc.boolean(), fc.constantFrom("true", 1, null))).map((t) => [...t]),
  fc.jsonValue({ maxDepth: 2 }),
);

/** What Binance answers (docs/binance.md#streams): the request, or its error code (0 unknown property, 1 bad value, 2 invalid request). */
function expected(message: Record<string, unknown>): { ok: true } | { code: number; id: unknown } {
  const raw = message.id;
  const idOk = raw === undefined || raw === null || Number.isSafeInteger(raw) || (typeof raw === "string" && /^[A-Za-z0-9-]{1,36}$/.test(raw));
  if (!idOk) return { code: 2, id: null };
  const id = raw ?? null;
  const m = message.method;
  const p = message.params;
  if (typeof m !== "string" || !METHODS.includes(m)) return { code: 2, id };
  if (m === "LIST_SUBSCRIPTIONS") return { ok: true };
  if (m === "SUBSCRIBE" || m === "UNSUBSCRIBE") {
    const names = Array.isArray(p) && p.every((n) => typeof n === "string");
    return names && p.length <= BINANCE_MAX_STREAMS ? { ok: true } : { code: 2, id };
  }
  if (!Array.isArray(p) || typeof p[0] !== "string") return { code: 2, id };
  if (p[0] !== "combined") return { code: 0, id };
  if (m === "GET_PROPERTY") return { ok: true };
  return typeof p[1] === "boolean" ? { ok: true } : { code: 1, id };
}

describe("Binance stream control messages (docs/binance.md#streams)", () => {
  it("any message is a request or Binance's error answer with the code Binance gives, echoing a valid id; nothing throws", () => {
    fc.assert(
      fc.property(fc.record({ id, method, params }, { requiredKeys: [] }), (message) => {
        const text = JSON.stringify(message);
        const parsed = parseBinanceRequest(text);
        // As the service reads it: -0 is sent as 0.
        const want = expected(JSON.parse(text));
        if ("ok" in want) {
          expect(parsed.ok, JSON.stringify(parsed)).toBe(true);
          if (parsed.ok) expect(parsed.request.method).toBe(message.method);
          return;
        }
        expect(parsed.ok, "refused").toBe(false);
        if (!parsed.ok) {
          expect(parsed.answer.error.code, parsed.answer.error.msg).toBe(want.code);
          expect(parsed.answer.id, "the id echoed when valid, else null").toEqual(want.id);
          expect(parsed.answer.error.msg.length).toBeGreaterThan(0);
        }
      }),
      { numRuns: 1_000 },
    );
  });

  it("text that is no JSON, or JSON that is no object, is refused with code 3 or 2 and a null id", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.jsonValue().map((v) => JSON.stringify(v)),
        ),
        (text) => {
          let value: unknown;
          try {
            value = JSON.parse(text);
          } catch {
            value = undefined;
          }
          const parsed = parseBinanceRequest(text);
          if (value !== undefined && typeof value === "object" && value !== null && !Array.isArray(value)) return;
          expect(parsed.ok).toBe(false);
          if (!parsed.ok) expect(parsed.answer).toMatchObject({ error: { code: value === undefined ? 3 : 2 }, id: null });
        },
      ),
    );
  });
});
