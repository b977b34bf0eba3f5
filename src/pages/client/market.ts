import { ClientBook, type BookMessage } from "./book";
import { LiveSocket } from "./socket";

/**
 * The live market page: ticker header, depth chart, ladder, trades tape and one-minute
 * candles, all over `/api/ws`, with two REST reads at start (candles and recent trades).
 */
interface Trade {
  id: string;
  price: string;
  quantity: string;
  side: "buy" | "sell";
  time: number;
}
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
const book = new ClientBook();
const trades: Trade[] = [];
let candles: Candle[] = [];
let dirty = true;
let resyncs = 0;
let dropNextDelta = false;

function setConnection(state: string): void {
  const element = $("connection");
  element.textContent = state;
  element.className = state;
}

function onTicker(ticker: Record<string, string>): void {
  for (const field of ["lastPrice", "change24h", "changePercent24h", "high24h", "low24h", "volume24h"]) {
    const element = document.querySelector<HTMLElement>(`[data-ticker="${field}"]`);
    if (element) element.textContent = field === "changePercent24h" ? `${ticker[field]}%` : ticker[field]!;
  }
  $("ticker").className = ticker.changePercent24h!.startsWith("-") ? "down" : "up";
}

function onTrade(trade: Trade): void {
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

function onBook(message: BookMessage): void {
  if (dropNextDelta && message.type === "delta") {
    dropNextDelta = false; // test hook: lose one delta, as a flaky network would
    return;
  }
  if (!book.apply(message)) {
    resyncs += 1;
    setConnection("resyncing");
    live.resubscribe(`book.${symbol}`);
    return;
  }
  if (live.socket?.readyState === WebSocket.OPEN && $("connection").textContent !== "live") setConnection("live");
  dirty = true;
}

function renderLadder(): void {
  const rows = (side: "bids" | "asks") =>
    book
      .ladder(side, 15)
      .map(([p, q]) => `<tr class="${side}" data-price="${p}"><td>${p}</td><td>${q}</td></tr>`)
      .join("");
  $("ladder-asks").innerHTML = rows("asks").split("</tr>").filter(Boolean).reverse().map((r) => `${r}</tr>`).join("");
  $("ladder-bids").innerHTML = rows("bids");
  $("book").dataset.sequence = String(book.sequence);
  const bestBid = book.ladder("bids", 1)[0]?.[0];
  const bestAsk = book.ladder("asks", 1)[0]?.[0];
  $("book").dataset.bestBid = bestBid ?? "";
  $("book").dataset.bestAsk = bestAsk ?? "";
  $("spread").textContent = bestBid !== undefined && bestAsk !== undefined ? `spread ${(Number(bestAsk) - Number(bestBid)).toPrecision(6)}` : "";
}

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
  const bids = book.depth("bids");
  const asks = book.depth("asks");
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
  ($("depth") as HTMLCanvasElement).dataset.drawn = String(bids.length + asks.length);
}

function renderCandles(): void {
  const [context, width, height] = canvasContext("candles");
  if (candles.length === 0) return;
  const high = Math.max(...candles.map((c) => c.high));
  const low = Math.min(...candles.map((c) => c.low));
  const y = (price: number) => 8 + ((high - price) / (high - low || 1)) * (height - 16);
  const step = width / Math.max(candles.length, 30);
  candles.forEach((candle, i) => {
    const cx = i * step + step / 2;
    context.strokeStyle = context.fillStyle = candle.close >= candle.open ? "#1f7a4d" : "#b3261e";
    context.beginPath();
    context.moveTo(cx, y(candle.high));
    context.lineTo(cx, y(candle.low));
    context.stroke();
    const top = y(Math.max(candle.open, candle.close));
    context.fillRect(cx - step * 0.35, top, step * 0.7, Math.max(1, y(Math.min(candle.open, candle.close)) - top));
  });
  ($("candles") as HTMLCanvasElement).dataset.drawn = String(candles.length);
}

function renderTrades(): void {
  $("trades").innerHTML = trades
    .slice(0, 30)
    .map((t) => `<tr class="${t.side}" data-id="${t.id}"><td>${new Date(t.time).toISOString().slice(11, 19)}</td><td>${t.price}</td><td>${t.quantity}</td></tr>`)
    .join("");
  $("trades").dataset.count = String(trades.length);
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

const live = new LiveSocket(
  [`ticker.${symbol}`, `trades.${symbol}`, `book.${symbol}`],
  (message) => {
    if (message.stream === `ticker.${symbol}`) onTicker(message.data);
    else if (message.stream === `trades.${symbol}`) onTrade(message.data);
    else if (message.stream === `book.${symbol}`) onBook(message.data);
  },
  (state) => {
    setConnection(state);
    if (state !== "live") book.ready = false; // a new connection starts from a new snapshot
  },
);

async function loadHistory(): Promise<void> {
  const [klines, recent] = await Promise.all([
    fetch(`/api/klines/${symbol}?interval=1m&limit=120`).then((r) => (r.ok ? r.json() : [])),
    fetch(`/api/trades/${symbol}?limit=30`).then((r) => (r.ok ? r.json() : [])),
  ]);
  const history = (klines as { openTime: number; open: string; high: string; low: string; close: string }[]).map((k) => ({
    openTime: k.openTime,
    open: Number(k.open),
    high: Number(k.high),
    low: Number(k.low),
    close: Number(k.close),
  }));
  const streamed = candles.filter((c) => !history.some((h) => h.openTime === c.openTime));
  candles = [...history, ...streamed].sort((a, b) => a.openTime - b.openTime).slice(-120);
  for (const trade of (recent as Trade[]).reverse()) if (!trades.some((t) => t.id === trade.id)) trades.push(trade);
  trades.sort((a, b) => b.time - a.time);
  dirty = true;
}

void loadHistory();
requestAnimationFrame(frame);

// For the browser tests: the socket, the book, and a way to lose one delta.
(window as unknown as { __mds: unknown }).__mds = {
  live,
  book,
  get resyncs() {
    return resyncs;
  },
  dropNextDelta() {
    dropNextDelta = true;
  },
};
