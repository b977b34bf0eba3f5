import type { BookMessage, Level, LocalBook, Ticker, Trade } from "../../../client/src/index";
import { client, showConnection, stream } from "./connection";
import { cumulativeDepth, subtractDecimal } from "./ladder";

/**
 * The live market page: ticker header, depth chart, ladder, trades tape and one-minute
 * candles, all over `/api/ws`, with two REST reads at start (candles and recent trades).
 */
interface Candle {
  openTime: number;
  open: number;
  high: number;
  low: number;
  close: number;
}

const root = document.getElementById("market")!;
const symbol = root.dataset.symbol!;
const $ = (id: string) => document.getElementById(id)!;
const trades: Trade[] = [];
let candles: Candle[] = [];
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
  const minute = Math.floor(trade.time / 60_000) * 60_000;
  const price = Number(trade.price);
  const last = candles[candles.length - 1];
  if (last && last.openTime === minute) {
    last.high = Math.max(last.high, price);
    last.low = Math.min(last.low, price);
    last.close = price;
  } else if (!last || minute > last.openTime) {
    candles.push({ openTime: minute, open: price, high: price, low: price, close: price });
    candles = candles.slice(-120);
  }
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

/** Candles placed by their minute (a minute without trades is a gap), prices labelled on the right. */
function renderCandles(): void {
  const [context, fullWidth, height] = canvasContext("candles");
  if (candles.length === 0) return;
  const gutter = 64;
  const width = fullWidth - gutter;
  const high = Math.max(...candles.map((c) => c.high));
  const low = Math.min(...candles.map((c) => c.low));
  const y = (price: number) => 14 + ((high - price) / (high - low || 1)) * (height - 30);
  const lastMinute = candles[candles.length - 1]!.openTime;
  const minutes = Math.max(30, (lastMinute - candles[0]!.openTime) / 60_000 + 1);
  const firstMinute = lastMinute - (minutes - 1) * 60_000;
  const step = width / minutes;
  for (const candle of candles) {
    const cx = ((candle.openTime - firstMinute) / 60_000) * step + step / 2;
    context.strokeStyle = context.fillStyle = candle.close >= candle.open ? "#1f7a4d" : "#b3261e";
    context.beginPath();
    context.moveTo(cx, y(candle.high));
    context.lineTo(cx, y(candle.low));
    context.stroke();
    const top = y(Math.max(candle.open, candle.close));
    context.fillRect(cx - step * 0.35, top, step * 0.7, Math.max(1, y(Math.min(candle.open, candle.close)) - top));
  }
  context.fillStyle = "#555";
  context.font = LABEL_FONT;
  context.textAlign = "left";
  context.textBaseline = "middle";
  context.fillText(priceLabel(high), width + 6, y(high));
  context.fillText(priceLabel(low), width + 6, y(low));
  context.textBaseline = "bottom";
  const time = (ms: number) => new Date(ms).toISOString().slice(11, 16);
  context.fillText(time(firstMinute), 0, height);
  context.textAlign = "right";
  context.fillText(`${time(lastMinute)} UTC`, width, height);
  ($("candles") as HTMLCanvasElement).dataset.drawn = String(candles.length);
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
    renderCandles();
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

async function loadHistory(): Promise<void> {
  const [klines, recent] = await Promise.all([
    client.listKlines({ pair: symbol, interval: "1m", limit: 120 }).catch(() => []),
    client.listTrades({ pair: symbol, limit: 30 }).catch(() => []),
  ]);
  const history = klines.map((k) => ({
    openTime: k.openTime,
    open: Number(k.open),
    high: Number(k.high),
    low: Number(k.low),
    close: Number(k.close),
  }));
  const streamed = candles.filter((c) => !history.some((h) => h.openTime === c.openTime));
  candles = [...history, ...streamed].sort((a, b) => a.openTime - b.openTime).slice(-120);
  for (const trade of recent.reverse()) if (!trades.some((t) => t.id === trade.id)) trades.push(trade);
  trades.sort((a, b) => b.time - a.time);
  dirty = true;
}

void loadHistory();
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
