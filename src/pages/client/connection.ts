import { MarketDataClient, MarketStream, type StreamState } from "../../../client/src/index";

/** The pages' REST client and stream connection: the official client package, on this origin. */
export const client = new MarketDataClient({ baseUrl: location.origin });
export const stream = new MarketStream({ client });

/** Shows the connection state in the page's badge (`live` when open). */
export function showConnection(state: StreamState | "resyncing"): void {
  const element = document.getElementById("connection")!;
  element.textContent = state === "open" ? "live" : state;
  element.className = element.textContent;
}
