import { type CandlestickData, CandlestickSeries, createChart, type UTCTimestamp } from "lightweight-charts";
import { CHART_THEME } from "./chart-theme";
import { client, stream } from "./connection";

/**
 * The market page's candle chart (docs/pages.md): lightweight-charts, bundled with the page.
 * An interval picker; the newest 1,000 candles first, older pages loaded as the reader scrolls
 * back (GET /api/klines with endTime), so the whole history is reachable; the last candle kept
 * live by `kline.{SYMBOL}.{interval}`.
 */
interface StreamedCandle {
  openTime: number;
  open: string;
  high: string;
  low: string;
  close: string;
  interval: string;
}

const PAGE = 1000;
const INTERVALS = ["1s", "1m", "3m", "5m", "15m", "30m", "1h", "2h", "4h", "6h", "8h", "12h", "1d", "3d", "1w", "1M"] as const;
type Interval = (typeof INTERVALS)[number];

const bar = (k: { openTime: number; open: string; high: string; low: string; close: string }): CandlestickData<UTCTimestamp> => ({
  time: (k.openTime / 1000) as UTCTimestamp,
  open: Number(k.open),
  high: Number(k.high),
  low: Number(k.low),
  close: Number(k.close),
});

export function candleChart(symbol: string, container: HTMLElement, picker: HTMLSelectElement): void {
  const chart = createChart(container, { ...CHART_THEME, timeScale: { timeVisible: true, secondsVisible: false, rightOffset: 4 } });
  const series = chart.addSeries(CandlestickSeries, {
    upColor: "#1f7a4d",
    downColor: "#b3261e",
    wickUpColor: "#1f7a4d",
    wickDownColor: "#b3261e",
    borderVisible: false,
  });
  let bars: CandlestickData<UTCTimestamp>[] = [];
  let interval: Interval = "1m";
  let loading = false;
  let complete = false;
  let unsubscribe: (() => void) | undefined;
  /** Bumped on every interval change: answers for an earlier interval are dropped. */
  let generation = 0;

  const show = () => {
    series.setData(bars);
    container.dataset.drawn = String(bars.length);
    container.dataset.first = bars.length > 0 ? String(bars[0]!.time * 1000) : "";
    container.dataset.interval = interval;
  };

  /** One more page before the oldest candle shown; none left ends the walk. */
  const loadOlder = async () => {
    if (loading || complete || bars.length === 0) return;
    loading = true;
    const asked = generation;
    try {
      const older = await client.listKlines({ pair: symbol, interval, limit: PAGE, endTime: bars[0]!.time * 1000 - 1 });
      if (asked !== generation) return;
      if (older.length === 0) complete = true;
      else {
        bars = [...older.map(bar), ...bars];
        const range = chart.timeScale().getVisibleLogicalRange();
        show();
        // The view stays on the same candles while the older ones arrive on its left.
        if (range) chart.timeScale().setVisibleLogicalRange({ from: range.from + older.length, to: range.to + older.length });
      }
    } finally {
      loading = false;
    }
  };

  const choose = async (next: Interval) => {
    generation += 1;
    const asked = generation;
    interval = next;
    complete = false;
    unsubscribe?.();
    const newest = await client.listKlines({ pair: symbol, interval, limit: PAGE }).catch(() => []);
    if (asked !== generation) return;
    bars = newest.map(bar);
    show();
    chart.timeScale().scrollToRealTime();
    unsubscribe = stream.subscribe(`kline.${symbol}.${interval}`, (data) => {
      const candle = data as StreamedCandle;
      if (candle.interval !== interval) return;
      const live = bar(candle);
      const last = bars[bars.length - 1];
      if (last && live.time < last.time) return; // a late trade's older candle: REST has it
      if (last && live.time === last.time) bars[bars.length - 1] = live;
      else bars.push(live);
      series.update(live);
      container.dataset.drawn = String(bars.length);
    });
  };

  chart.timeScale().subscribeVisibleLogicalRangeChange((range) => {
    if (range && range.from < 50) void loadOlder();
  });
  picker.innerHTML = INTERVALS.map((i) => `<option value="${i}"${i === interval ? " selected" : ""}>${i}</option>`).join("");
  picker.addEventListener("change", () => void choose(picker.value as Interval));
  void choose(interval);
}
