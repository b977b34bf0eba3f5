/** @jsxImportSource hono/jsx */
import type { Child } from "hono/jsx";

/** The HTML shell every page shares: phone-ready viewport, its stylesheet from the service itself, no CDN. */
export function HtmlDocument(props: { title: string; stylesheet: string; children: Child; refreshSeconds?: number | undefined }) {
  return (
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{props.title} — Market Data Service</title>
        {/* A page that must stay current without a script reloads itself. */}
        {props.refreshSeconds !== undefined && <meta http-equiv="refresh" content={String(props.refreshSeconds)} />}
        {/* No favicon request: the pages make no request they do not need. */}
        <link rel="icon" href="data:," />
        <link rel="stylesheet" href={props.stylesheet} />
      </head>
      <body>{props.children}</body>
    </html>
  );
}

/** A table's heading row: a `th` a name, in order (an empty name heads a column of actions). */
export function HeaderRow(props: { names: string[] }) {
  return (
    <tr>
      {props.names.map((name) => (
        <th>{name}</th>
      ))}
    </tr>
  );
}
