// `node bench/heap-watch.mjs --port N [--every 15] [--script .bench/…js] [--dump-above MiB]`
//
// What a running bench's service holds: attaches to its runtime's inspector (a bench started with
// `--inspector-port N`), prints the V8 heap's used and total size every `--every` seconds with the
// runtime's RSS, and keeps V8's sampling heap profiler running. Each time the used heap first
// passes another `--dump-above` MiB (default 200), it writes the live allocations by source
// (through the bundle's source map with `--script`) to .bench/heap-{MiB}.json and prints the top
// ten: what is held, and where it was allocated. Stops when the inspector goes away.
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { inspector, sourceMapper } from "./inspector.mjs";
import { option } from "./load.mjs";
import { work } from "./service.mjs";

const PORT = Number(option("port", 9340));
const EVERY = Number(option("every", 15));
const STEP = Number(option("dump-above", 200));
const SCRIPT = option("script", undefined);
const map = SCRIPT
  ? sourceMapper(SCRIPT)
  : (frame) => ({ file: frame.url || "(native)", name: `${frame.functionName || "(anonymous)"} ${frame.url}:${frame.lineNumber + 1}` });

const mib = (bytes) => Math.round(bytes / 2 ** 20);
const rss = () => {
  try {
    return execFileSync("sh", ["-c", "ps -C workerd -o rss= | sort -n | tail -1"]).toString().trim() / 1024;
  } catch {
    return Number.NaN;
  }
};

/** Live sampled bytes by the innermost frame of src/ (or of a package) on each allocation's stack. */
function bySource(profile) {
  const totals = new Map();
  const walk = (node, owner) => {
    const { file, name } = map(node.callFrame);
    const here = file.startsWith("src/") || file.startsWith("node_modules/") ? name : owner;
    const own = node.selfSize ?? 0;
    if (own) totals.set(here ?? name, (totals.get(here ?? name) ?? 0) + own);
    for (const child of node.children ?? []) walk(child, here);
  };
  walk(profile.head, undefined);
  return [...totals].sort((a, b) => b[1] - a[1]);
}

const client = inspector(`ws://127.0.0.1:${PORT}/core:user:service`);
await client.opened;
await client.send("HeapProfiler.enable");
await client.send("HeapProfiler.startSampling", { samplingInterval: 32_768 });
let next = STEP;
const began = Date.now();
for (;;) {
  let usage;
  try {
    usage = await client.send("Runtime.getHeapUsage");
  } catch {
    break;
  }
  const used = mib(usage.usedSize);
  console.log(`${Math.round((Date.now() - began) / 1000)} s: heap ${used}/${mib(usage.totalSize)} MiB, workerd RSS ${Math.round(rss())} MiB`);
  if (used >= next) {
    const { profile } = await client.send("HeapProfiler.getSamplingProfile");
    const top = bySource(profile);
    writeFileSync(path.join(work, `heap-${used}.json`), JSON.stringify(top));
    for (const [where, bytes] of top.slice(0, 10)) console.log(`  ${String(mib(bytes)).padStart(6)} MiB  ${where}`);
    next = (Math.floor(used / STEP) + 1) * STEP;
  }
  await new Promise((resolve) => setTimeout(resolve, EVERY * 1000));
}
client.close();
