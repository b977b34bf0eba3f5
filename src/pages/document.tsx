/** @jsxImportSource hono/jsx */
import type { Child } from "hono/jsx";

/** The HTML shell every page shares: phone-ready viewport, its own inline style, no CDN. */
export function HtmlDocument(props: { title: string; style: string; children: Child }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{props.title} — Market Data Service</title>
        {/* No favicon request: the pages make no request they do not need. */}
        <link rel="icon" href="data:," />
        <style>{props.style}</style>
      </head>
      <body>{props.children}</body>
    </html>
  );
}
