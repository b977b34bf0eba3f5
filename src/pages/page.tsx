/** @jsxImportSource hono/jsx */
import type { Child } from "hono/jsx";
import { HtmlDocument } from "./document";
import { ASSETS } from "./generated/assets";

/** The frame of the pages for people: the service's name, the links every page carries, the page's own script. */
export function Page(props: { title: string; children: Child; script?: "landing.js" | "market.js"; refreshSeconds?: number }) {
  return (
    <HtmlDocument title={props.title} stylesheet={ASSETS["site.css"]} refreshSeconds={props.refreshSeconds}>
      <header>
        <h1 style="margin:.3rem 0">
          <a href="/" style="color:inherit;text-decoration:none">
            Market Data Service
          </a>
        </h1>
        {props.script && <span id="connection">connecting</span>}
        <nav>
          <a href="/docs">API reference</a> · <a href="/dashboard">Dashboard (API keys)</a> · <a href="/status">Status</a>
        </nav>
      </header>
      {props.children}
      {props.script && <script src={ASSETS[props.script]} defer></script>}
    </HtmlDocument>
  );
}
