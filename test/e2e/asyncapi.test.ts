import { Parser } from "@asyncapi/parser";
import { describe, expect, inject, it } from "vitest";
import { connect, isOpen } from "./ws-client";

const baseUrl = inject("baseUrl");

type Payload = { required?: string[]; properties?: Record<string, Payload> };

describe("the AsyncAPI document of the streams (/asyncapi.json)", () => {
  it("is valid AsyncAPI 3: the official parser reports no error and no warning", async () => {
    const text = await (await fetch(`${baseUrl}/asyncapi.json`)).text();
    const { document, diagnostics } = await new Parser().parse(text);
    const serious = diagnostics.filter((d) => d.severity <= 1).map((d) => `${d.code} at ${d.path.join(".")}: ${d.message}`);
    expect(serious, "the parser's errors and warnings").toEqual([]);
    expect(
      document
        ?.channels()
        .all()
        .map((c) => c.address()),
    ).toEqual(["/api/ws", "/v1/ws", "/v1/publish", "/api/replay"]);
  });

  it("has a message for every stream kind, and the live streams send what their payloads require", async () => {
    const spec = (await (await fetch(`${baseUrl}/asyncapi.json`)).json()) as { components: { messages: Record<string, { payload: Payload }> } };
    // Each stream and the message that documents it.
    const messages: Record<string, string> = {
      "ticker.BTCUSDT": "ticker",
      "ticker.BTCUSDT.1h": "tickerWindow",
      "avgPrice.BTCUSDT": "avgPrice",
      "bookTicker.BTCUSDT": "bookTicker",
      "trades.BTCUSDT": "trades",
      "book.BTCUSDT": "book",
      "kline.BTCUSDT.1m": "kline",
      "kline.BTCUSDT.1d@+08:00": "kline",
      "prices.USDT": "prices",
      heartbeat: "heartbeat",
    };
    for (const kind of [...Object.values(messages), "tickers", "tickersWindow", "status"]) expect(spec.components.messages[kind], kind).toBeDefined();
    const streams = Object.keys(messages);
    const c = await connect(baseUrl, `/api/ws?streams=${streams.map(encodeURIComponent).join(",")}`, "198.18.250.1");
    if (!isOpen(c)) throw new Error(`refused: ${c.status}`);
    try {
      for (const stream of streams) {
        const message = await c.next((m) => m.stream === stream, 20_000);
        const payload = spec.components.messages[messages[stream]!]!.payload;
        const data = payload.properties!.data!;
        for (const field of data.required ?? []) expect(message.data, `${stream} carries ${field}`).toHaveProperty(field);
      }
    } finally {
      c.ws.close();
    }
  });

  it("a subscription from a past moment sends what the ack and live messages require", async () => {
    const spec = (await (await fetch(`${baseUrl}/asyncapi.json`)).json()) as { components: { messages: Record<string, { payload: Payload }> } };
    const c = await connect(baseUrl, `/api/ws?streams=book.BTCUSDT,trades.BTCUSDT&from=${Date.now() - 3_000}`, "198.18.250.2");
    if (!isOpen(c)) throw new Error(`refused: ${c.status}`);
    try {
      const ack = await c.next((m) => m.id === null && m.result);
      const ackResult = spec.components.messages.ack!.payload.properties!.result!;
      for (const field of ["from", "catchingUp", "startsNow"]) expect(ackResult.properties, `the ack documents ${field}`).toHaveProperty(field);
      expect(ack.result.catchingUp, "both streams catch up").toEqual(["book.BTCUSDT", "trades.BTCUSDT"]);
      for (const stream of ["book.BTCUSDT", "trades.BTCUSDT"]) {
        const live = await c.next((m) => m.type === "live" && m.stream === stream, 20_000);
        for (const field of spec.components.messages.live!.payload.required ?? []) expect(live, `${stream}'s live mark carries ${field}`).toHaveProperty(field);
      }
    } finally {
      c.ws.close();
    }
  });
});
