import type { DeepPartial, TimeChartOptions } from "lightweight-charts";

/** The look every chart of the pages shares (the market page's candles, the dashboard's usage). */
export const CHART_THEME: DeepPartial<TimeChartOptions> = {
  autoSize: true,
  layout: { background: { color: "transparent" }, textColor: "#555", attributionLogo: false },
  grid: { vertLines: { color: "#eee" }, horzLines: { color: "#eee" } },
};
