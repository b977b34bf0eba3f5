/**
 * How a connection's stream names are kept in its hibernation attachment, which the runtime
 * bounds at 16 KiB a socket: each name's part before its first `@` once, in a table, and the
 * names as `index:rest` — a connection holding many streams of a few markets (Binance's 1024)
 * keeps each market's symbol once. Pure.
 */

const ENTRIES = "\n";
const ITEMS = "|";
const WHOLE = "#";

/** Packs names, in their order. Names hold neither `|` nor a line break (the protocols' grammars). */
export function packNames(names: readonly string[]): string {
  const prefixes = new Map<string, number>();
  const entries = names.map((name) => {
    const at = name.indexOf("@");
    if (at <= 0) return WHOLE + name;
    const prefix = name.slice(0, at);
    let index = prefixes.get(prefix);
    if (index === undefined) prefixes.set(prefix, (index = prefixes.size));
    return `${index}:${name.slice(at + 1)}`;
  });
  return [...prefixes.keys()].join(ITEMS) + ENTRIES + entries.join(ITEMS);
}

/** The names `packNames` packed; an attachment from before packing holds them as an array. */
export function unpackNames(packed: string | readonly string[] | undefined): string[] {
  if (packed === undefined) return [];
  if (Array.isArray(packed)) return [...packed];
  const text = packed as string;
  const split = text.indexOf(ENTRIES);
  const prefixes = text.slice(0, split).split(ITEMS);
  const body = text.slice(split + 1);
  if (body === "") return [];
  return body.split(ITEMS).map((entry) => {
    if (entry.startsWith(WHOLE)) return entry.slice(1);
    const colon = entry.indexOf(":");
    return `${prefixes[Number(entry.slice(0, colon))]}@${entry.slice(colon + 1)}`;
  });
}
