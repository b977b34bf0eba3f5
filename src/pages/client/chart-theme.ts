import type { DeepPartial, TimeChartOptions } from "lightweight-charts";

/**
 * The browser's language when Intl takes it, else English: some browsers report a tag Intl
 * refuses (a POSIX locale's `en-US@posix`), and the charts format their times with it.
 */
function chartLocale(): string {
  try {
    new Intl.DateTimeFormat(navigator.language);
    return navigator.language;
  } catch {
    return "en-US";
  }
}

/** The look every chart of the pages shares (the market page's candles, the dashboard's usage). */
export const CHART_THEME: DeepPartial<TimeChartOptions> = {
  autoSize: true,
  layout: { background: { color: "transparent" }, textColor: "#555", attributionLogo: false },
  grid: { vertLines: { color: "#eee" }, horzLines: { color: "#eee" } },
  localization: { locale: chartLocale() },
};
