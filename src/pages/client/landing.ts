import type { Ticker } from "../../../client/src/index";
import { showConnection, stream } from "./connection";

/**
 * The landing page: one `tickers` subscription keeps every market's row live, however many
 * markets there are — each message carries only the tickers that changed, and only their rows
 * are touched. The server lists them by 24 h quote volume, busiest first; rows keep their place
 * as prices move. The search box hides the rows that do not match.
 */
const rows = new Map<string, HTMLTableRowElement>();
for (const row of document.querySelectorAll<HTMLTableRowElement>("tr[data-symbol]")) rows.set(row.dataset.symbol!, row);

function update(ticker: Ticker): void {
  const row = rows.get(ticker.symbol);
  // Until its first trade a market keeps its dashes (its last price is 0).
  if (!row || !/[1-9]/.test(ticker.lastPrice)) return;
  const cell = (name: string) => row.querySelector<HTMLElement>(`[data-field="${name}"]`)!;
  if (cell("lastPrice").textContent !== ticker.lastPrice) {
    cell("lastPrice").textContent = ticker.lastPrice;
    row.classList.remove("flash");
    void row.offsetWidth;
    row.classList.add("flash");
  }
  const change = cell("change");
  change.textContent = `${ticker.changePercent24h.startsWith("-") ? "" : "+"}${ticker.changePercent24h}%`;
  change.className = ticker.changePercent24h.startsWith("-") ? "down" : Number(ticker.changePercent24h) > 0 ? "up" : "";
  cell("volume").textContent = ticker.volume24h;
}

showConnection(stream.state);
stream.onState(showConnection);
stream.subscribe("tickers", (data) => {
  for (const ticker of data as Ticker[]) update(ticker);
});

const search = document.querySelector<HTMLInputElement>("#market-search");
search?.addEventListener("input", () => {
  const wanted = search.value
    .trim()
    .toUpperCase()
    .replace(/[-_/ ]/g, "");
  for (const [symbol, row] of rows) row.hidden = wanted !== "" && !symbol.includes(wanted);
});
