/**
 * The layers of src/ (docs/design.md#layers), lowest first. A file may import its own layer and
 * the layers below it, never one above: `npm run lint` fails on an arrow that points up.
 *
 *   core      the runtime's small helpers (decimals, problems, settings, ids)
 *   domain    the market's types and pure math: book, levels, trades, buckets, intervals, candles
 *   http      the app's context, router and error answers
 *   writes    what a market's host stores and how (journal, rings, blocks)
 *   history   book segments, trade chunks, archives, files
 *   market    the market's host: its state, commits, reads and streams out
 *   reads     the edge's copies of market answers
 *   entries   routes, connections and middleware, in any folder: what a request or a socket enters
 *   services and dialects on top (access, streams, binance, v1, publish, …)
 *
 * Services (access, registry, groups, streams, announcements, audit, logs, metrics, rpc-sessions)
 * are the objects' neighbours: the market layers may use them; they never import an entry or a
 * dialect.
 */
const ENTRY = "(routes|connection|middleware)\\.tsx?$";
const DIALECTS = "^src/(binance|tardis|v1|pages|publish|accounts|settlements|admin|docs)/|^src/(app|index)\\.tsx?$";
const SERVICES = "^src/(access|registry|groups|streams|announcements|audit|logs|metrics|rpc-sessions)/";
const only = (name, from, allowed) => ({
  name,
  severity: "error",
  from: { path: from, pathNot: ENTRY },
  to: { path: "^src/", pathNot: allowed },
});

module.exports = {
  forbidden: [
    { name: "no-circular", severity: "error", from: {}, to: { circular: true } },
    only("core-is-the-floor", "^src/core/", "^src/core/"),
    only("domain-is-pure", "^src/domain/", "^src/(core|domain)/"),
    only("http-below-writes", "^src/http/", "^src/(core|domain|http)/"),
    only("writes-below-market", "^src/writes/", "^src/(core|domain|writes)/|^src/logs/log\\.ts$"),
    {
      name: "history-below-market",
      severity: "error",
      from: { path: "^src/history/", pathNot: ENTRY },
      to: { path: [`^src/(market|reads)/`, DIALECTS, ENTRY] },
    },
    {
      name: "market-below-reads",
      severity: "error",
      from: { path: "^src/market/", pathNot: ENTRY },
      to: { path: [`^src/reads/`, DIALECTS, ENTRY] },
    },
    {
      name: "reads-never-storage",
      comment: "The edge reads answers, never a host's storage: what it shares with writes is in domain/.",
      severity: "error",
      from: { path: "^src/reads/", pathNot: ENTRY },
      to: { path: [`^src/writes/`, DIALECTS, ENTRY] },
    },
    {
      name: "services-below-entries",
      severity: "error",
      from: { path: SERVICES, pathNot: ENTRY },
      to: { path: [DIALECTS, ENTRY] },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    exclude: { path: "^src/pages/client/" },
  },
};
