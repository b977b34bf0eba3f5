import { describe, expect, it } from "vitest";
import { adminToken, issuePublishKey } from "../../scripts/publish-key.mjs";
import { startService } from "../../scripts/service.mjs";
import { listVenue } from "../../scripts/venue.mjs";
import { publisherChannel } from "./publisher";

const price = (n: number) => (100 + n / 100).toFixed(2);

describe("an acknowledgement is durable (docs/publishing.md#acknowledgements)", () => {
  it("kill -9 of the whole runtime right after the last acknowledgement loses nothing acknowledged; after the restart every trade is there once, the book at its last sequence, and a resend is a duplicate", async () => {
    const first = await startService();
    let second: Awaited<ReturnType<typeof startService>> | undefined;
    try {
      const base = first.baseUrl;
      await listVenue({ url: base, token: adminToken(), count: 1 }); // V0USDT: no demo feed writes it
      const key = await issuePublishKey(base, adminToken(), { label: "crash test", markets: ["V0USDT"] });
      const publisher = await publisherChannel(base, key);
      const snapshot = { symbol: "V0USDT", book: { type: "snapshot", sequence: 1, bids: [[price(-1), "5.000"]], asks: [[price(1), "5.000"]] } };
      for (let attempt = 0; ; attempt++) {
        const answer = await publisher.send(snapshot); // the listing reaches every isolate within a second
        if (answer.result) break;
        if (attempt > 40) throw new Error(`the new market takes no batch: ${JSON.stringify(answer.error)}`);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
      // 60 batches pipelined, each a delta of three levels and 20 trades; the book the publisher builds alongside.
      const book = { bids: new Map([[price(-1), "5.000"]]), asks: new Map([[price(1), "5.000"]]) };
      const batches = Array.from({ length: 60 }, (_, b) => {
        const bids: [string, string][] = [
          [price(-2 - (b % 7)), `${1 + (b % 5)}.000`],
          [price(-1), b % 3 === 0 ? "0" : `${2 + b}.000`],
        ];
        const asks: [string, string][] = [[price(2 + (b % 4)), `${3 + b}.000`]];
        for (const [p, q] of bids) q === "0" ? book.bids.delete(p) : book.bids.set(p, q);
        for (const [p, q] of asks) book.asks.set(p, q);
        const trades = Array.from({ length: 20 }, (_, t) => ({ id: `crash-${b}-${t}`, price: price(1), quantity: "0.010", side: "buy", time: Date.now() }));
        return { symbol: "V0USDT", book: { type: "delta", sequence: 2 + b, bids, asks }, trades };
      });
      const answers = await Promise.all(batches.map((batch) => publisher.send(batch)));
      expect(
        answers.every((a) => (a.result as { acceptedTrades?: number } | undefined)?.acceptedTrades === 20),
        "every batch acknowledged, all its trades taken",
      ).toBe(true);
      // At once after the last acknowledgement: the runtime's whole process group, no chance to flush anything.
      await first.kill();

      second = await startService({ state: first.state, port: first.port });
      const ids: string[] = [];
      for (let fromId = 1; ; ) {
        const response = await fetch(`${base}/api/trades/V0USDT?fromId=${fromId}&limit=1000`, { headers: { "CF-Connecting-IP": "198.18.90.1" } });
        expect(response.status, "a page of trades after the restart").toBe(200);
        const page = (await response.json()) as { id: string; tradeId: number }[];
        ids.push(...page.map((t) => t.id));
        if (page.length < 1000) break;
        fromId = page.at(-1)!.tradeId + 1;
      }
      const acknowledged = batches.flatMap((batch) => batch.trades.map((t) => t.id));
      expect(ids.length, "trades after the restart: each acknowledged one once").toBe(acknowledged.length);
      expect([...ids].sort(), "the acknowledged trades, none lost, none twice").toEqual([...acknowledged].sort());
      const stored = (await (await fetch(`${base}/api/orderbook/V0USDT?depth=100`, { headers: { "CF-Connecting-IP": "198.18.90.2" } })).json()) as {
        sequence: number;
        bids: [string, string][];
        asks: [string, string][];
      };
      const sorted = (side: Map<string, string>, descending: boolean) =>
        [...side].sort(([a], [b]) => (descending ? Number(b) - Number(a) : Number(a) - Number(b))).map(([p, q]) => [p, q]);
      expect(stored.sequence, "the book at the last acknowledged sequence").toBe(61);
      expect({ bids: stored.bids, asks: stored.asks }, "the book the publisher built").toEqual({
        bids: sorted(book.bids, true),
        asks: sorted(book.asks, false),
      });
      const again = await publisherChannel(base, key);
      const resent = await again.send(batches.at(-1)!);
      expect(resent.result, "the last batch resent after the restart").toMatchObject({ acceptedTrades: 0, duplicateTrades: 20, book: "duplicate" });
      again.close();
    } finally {
      await second?.stop();
      await first.stop();
    }
  });
});
