import type { BookMessage, Level, LocalBook, Ticker, Trade } from "../../../client/src/index";
import { candleChart } from "./chart";
import { client, showConnection, stream } from "./connection";
import { cumulativeDepth, subtractDecimal } from "./ladder";

/**
 * The live market page: ticker header, depth chart, ladder, trades tape and the candle chart
 * (./chart.ts), all over `/api/ws`, with REST reads at start (recent trades, the candles).
 */

const root = document.getElementById("market")!;
const symbol = root.dataset.symbol!;
const $ = (id: string) => document.getElementById(id)!;
const trades: Trade[] = [];
let dirty = true;
let streamedTrades = 0;
let dropNextDelta = false;
let corruptNextDelta = false;

function onTicker(ticker: Ticker): void {
  for (const field of ["lastPrice", "change24h", "changePercent24h", "high24h", "low24h", "volume24h"] as const) {
    const element = document.querySelector<HTMLElement>(`[data-ticker="${field}"]`);
    if (element) element.textContent = field === "changePercent24h" ? `${ticker[field]}%` : ticker[field];
  }
  $("ticker").className = ticker.changePercent24h.startsWith("-") ? "down" : "up";
}

/** Server strings go into the page as text, never as markup (a trade id is any 1–64 characters). */
const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

function onTrade(trade: Trade): void {
  streamedTrades += 1;
  trades.unshift(trade);
  trades.length = Math.min(trades.length, 60);
  dirty = true;
}

/**
 * The book, kept by the client package: on a gap or a checksum mismatch it asks for a new
 * snapshot itself. The two hooks let the browser tests lose or alter one delta in transit.
 */
function inspect(message: BookMessage, current: LocalBook): BookMessage | undefined {
  if (dropNextDelta && message.type === "delta" && current.synced) {
    dropNextDelta = false; // lose one delta, as a flaky network would
    return undefined;
  }
  if (corruptNextDelta && message.type === "delta" && current.synced) {
    // The best bid's quantity altered in transit; only the checksum can tell.
    const best = current.bestBid();
    if (best) {
      corruptNextDelta = false;
      return { ...message, bids: [...message.bids, [best[0], best[1] === "1" ? "2" : "1"]] };
    }
  }
  return message;
}

const { book } = stream.book(symbol, {
  inspect,
  onResync: () => showConnection("resyncing"),
  onUpdate: () => {
    if (stream.state === "open" && $("connection").textContent !== "live") showConnection("open");
    dirty = true;
  },
});

const LADDER_LEVELS = 15;

/** Rows with the cumulative total from the touch, shaded in proportion to it (the depth, as a bar). */
function ladderRows(side: "bids" | "asks", levels: Level[], maxTotal: number): string[] {
  let total = 0;
  return levels.map(([price, quantity]) => {
    total += Number(quantity);
    const share = ((total / maxTotal) * 100).toFixed(1);
    const colour = side === "bids" ? "rgba(31,122,77,.12)" : "rgba(179,38,30,.12)";
    return `<tr class="${side}" data-price="${escapeHtml(price)}" style="background:linear-gradient(to left,${colour} ${share}%,transparent ${share}%)"><td>${escapeHtml(price)}</td><td>${escapeHtml(quantity)}</td><td>${total.toFixed(quantity.split(".")[1]?.length ?? 0)}</td></tr>`;
  });
}

function renderLadder(): void {
  const bids = book.ladder("bids", LADDER_LEVELS);
  const asks = book.ladder("asks", LADDER_LEVELS);
  const sum = (levels: Level[]) => levels.reduce((total, [, quantity]) => total + Number(quantity), 0);
  const maxTotal = Math.max(sum(bids), sum(asks)) || 1;
  // Asks above bids, the best of each next to the spread.
  $("ladder-asks").innerHTML = ladderRows("asks", asks, maxTotal).reverse().join("");
  $("ladder-bids").innerHTML = ladderRows("bids", bids, maxTotal).join("");
  const bestBid = bids[0]?.[0];
  const bestAsk = asks[0]?.[0];
  Object.assign($("book").dataset, { sequence: String(book.sequence), ready: String(book.synced), bestBid: bestBid ?? "", bestAsk: bestAsk ?? "" });
  $("spread").textContent = bestBid !== undefined && bestAsk !== undefined ? `spread ${subtractDecimal(bestAsk, bestBid)}` : "";
}

const LABEL_FONT = "11px system-ui,sans-serif";
const priceLabel = (price: number) => price.toPrecision(6);

function canvasContext(id: string): [CanvasRenderingContext2D, number, number] {
  const canvas = $(id) as HTMLCanvasElement;
  const ratio = window.devicePixelRatio || 1;
  const width = canvas.clientWidth;
  const height = canvas.clientHeight;
  if (canvas.width !== width * ratio) {
    canvas.width = width * ratio;
    canvas.height = height * ratio;
  }
  const context = canvas.getContext("2d")!;
  context.setTransform(ratio, 0, 0, ratio, 0, 0);
  context.clearRect(0, 0, width, height);
  return [context, width, height];
}

function renderDepth(): void {
  const [context, width, height] = canvasContext("depth");
  const bids = cumulativeDepth(book.bids(50));
  const asks = cumulativeDepth(book.asks(50));
  if (bids.length === 0 || asks.length === 0) return;
  const low = bids[bids.length - 1]![0];
  const high = asks[asks.length - 1]![0];
  const maxTotal = Math.max(bids[bids.length - 1]![1], asks[asks.length - 1]![1]);
  const x = (price: number) => ((price - low) / (high - low || 1)) * width;
  const y = (total: number) => height - (total / maxTotal) * (height - 10);
  for (const [levels, color] of [
    [bids, "rgba(31,122,77,"],
    [asks, "rgba(179,38,30,"],
  ] as const) {
    context.beginPath();
    context.moveTo(x(levels[0]![0]), height);
    for (const [price, total] of levels) context.lineTo(x(price), y(total));
    context.lineTo(x(levels[levels.length - 1]![0]), height);
    context.closePath();
    context.fillStyle = `${color}0.25)`;
    context.fill();
    context.strokeStyle = `${color}1)`;
    context.stroke();
  }
  context.fillStyle = "#555";
  context.font = LABEL_FONT;
  context.textBaseline = "bottom";
  context.textAlign = "left";
  context.fillText(priceLabel(low), 2, height - 2);
  context.textAlign = "right";
  context.fillText(priceLabel(high), width - 2, height - 2);
  context.textAlign = "center";
  context.textBaseline = "top";
  context.fillText(`mid ${priceLabel((bids[0]![0] + asks[0]![0]) / 2)}`, width / 2, 2);
  ($("depth") as HTMLCanvasElement).dataset.drawn = String(bids.length + asks.length);
}

function renderTrades(): void {
  $("trades").innerHTML = trades
    .slice(0, 30)
    .map(
      (t) =>
        `<tr class="${t.side === "buy" ? "buy" : "sell"}" data-id="${escapeHtml(t.id)}"><td>${new Date(t.time).toISOString().slice(11, 19)}</td><td>${escapeHtml(t.price)}</td><td>${escapeHtml(t.quantity)}</td></tr>`,
    )
    .join("");
  $("trades").dataset.count = String(trades.length);
  $("trades").dataset.streamed = String(streamedTrades);
}

function frame(): void {
  if (dirty) {
    dirty = false;
    renderLadder();
    renderDepth();
    renderTrades();
  }
  requestAnimationFrame(frame);
}

showConnection(stream.state);
stream.onState(showConnection);
stream.subscribe(`ticker.${symbol}`, (data) => onTicker(data as Ticker));
stream.subscribe(`trades.${symbol}`, (data) => {
  for (const trade of [data].flat() as Trade[]) onTrade(trade);
});

async function loadTrades(): Promise<void> {
  const recent = await client.listTrades({ pair: symbol, limit: 30 }).catch(() => []);
  for (const trade of recent.reverse()) if (!trades.some((t) => t.id === trade.id)) trades.push(trade);
  trades.sort((a, b) => b.time - a.time);
  dirty = true;
}

void loadTrades();
candleChart(symbol, $("candles"), $("interval") as HTMLSelectElement);
requestAnimationFrame(frame);

// For the browser tests: the connection, the book, and ways to lose or alter one delta.
(window as unknown as { __mds: unknown }).__mds = {
  stream,
  book,
  get resyncs() {
    return stream.resyncs;
  },
  dropNextDelta() {
    dropNextDelta = true;
  },
  corruptNextDelta() {
    corruptNextDelta = true;
  },
};
