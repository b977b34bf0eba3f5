import { createChart, HistogramSeries, type UTCTimestamp } from "lightweight-charts";
import { CHART_THEME } from "./chart-theme";

/**
 * The dashboard's copy button for a new key's secret. Without JavaScript the secret stays
 * selectable; outside a secure context there is no `navigator.clipboard`, so it falls back to
 * selecting the secret and the legacy copy command.
 */
const button = document.getElementById("copy-secret");
button?.addEventListener("click", () => {
  const secret = button.getAttribute("data-secret") ?? "";
  const done = (ok: boolean) => {
    button.textContent = ok ? "Copied" : "Select and copy the secret above";
  };
  const fallback = () => {
    const range = document.createRange();
    range.selectNodeContents(document.getElementById("secret-value")!);
    const selection = window.getSelection()!;
    selection.removeAllRanges();
    selection.addRange(range);
    try {
      done(document.execCommand("copy"));
    } catch {
      done(false);
    }
  };
  if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(secret).then(() => done(true), fallback);
  else fallback();
});

/**
 * Each key's usage (docs/limits.md#your-keys-usage): requests and 429s per bucket, from
 * `GET /account/api-keys/{id}/usage` with the session cookie, as bars.
 */
interface UsageBucket {
  start: number;
  requests: number;
  rateLimited: number;
}

const usageChart = document.getElementById("usage-chart");
const usageKey = document.getElementById("usage-key") as HTMLSelectElement | null;
const usageInterval = document.getElementById("usage-interval") as HTMLSelectElement | null;
if (usageChart && usageKey && usageInterval) {
  const chart = createChart(usageChart, { ...CHART_THEME, timeScale: { timeVisible: true, secondsVisible: false } });
  const requests = chart.addSeries(HistogramSeries, { color: "#3b6ea5", priceFormat: { type: "volume" } });
  const limited = chart.addSeries(HistogramSeries, { color: "#b3261e", priceFormat: { type: "volume" } });
  const summary = document.getElementById("usage-summary")!;
  const load = async () => {
    const response = await fetch(`/account/api-keys/${encodeURIComponent(usageKey.value)}/usage?interval=${usageInterval.value}`, {
      credentials: "same-origin",
    });
    if (!response.ok) {
      summary.textContent = `The usage could not be read (${response.status}).`;
      return;
    }
    const { buckets } = (await response.json()) as { buckets: UsageBucket[] };
    const at = (b: UsageBucket) => (b.start / 1000) as UTCTimestamp;
    requests.setData(buckets.map((b) => ({ time: at(b), value: b.requests })));
    limited.setData(buckets.map((b) => ({ time: at(b), value: b.rateLimited })));
    chart.timeScale().fitContent();
    const total = buckets.reduce((n, b) => n + b.requests, 0);
    const refused = buckets.reduce((n, b) => n + b.rateLimited, 0);
    usageChart.dataset.requests = String(total);
    usageChart.dataset.rateLimited = String(refused);
    summary.textContent = `${total.toLocaleString("en")} requests, ${refused.toLocaleString("en")} refused with 429 (blue: requests, red: 429s).`;
  };
  usageKey.addEventListener("change", load);
  usageInterval.addEventListener("change", load);
  void load();
}
