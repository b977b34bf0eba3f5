// V8's inspector on the bench's workerd: a small CDP client and a source mapper that names a
// profile's frames by the file and function of src/ they came from (through the bundle's map).
import { readFileSync, writeFileSync } from "node:fs";
import { SourceMap } from "node:module";
import path from "node:path";
import WebSocket from "ws";
import { root, work } from "./service.mjs";

export function inspector(url) {
  const socket = new WebSocket(url);
  let id = 0;
  const pending = new Map();
  socket.on("message", (data) => {
    const message = JSON.parse(String(data));
    pending.get(message.id)?.(message);
    pending.delete(message.id);
  });
  const opened = new Promise((resolve, reject) => {
    socket.once("open", resolve);
    socket.once("error", reject);
  });
  return {
    opened,
    send: (method, params = {}) =>
      new Promise((resolve, reject) => {
        const messageId = ++id;
        pending.set(messageId, (message) => (message.error ? reject(new Error(`${method}: ${message.error.message}`)) : resolve(message.result)));
        socket.send(JSON.stringify({ id: messageId, method, params }));
      }),
    close: () => socket.close(),
  };
}

/** Maps a bundle position to `file:function` of the original source. */
export function sourceMapper(scriptPath) {
  const map = new SourceMap(JSON.parse(readFileSync(`${scriptPath}.map`, "utf8")));
  return (frame) => {
    if (!frame.url || frame.lineNumber < 0) return { file: frame.functionName || frame.url || "(native)", name: frame.functionName || "(anonymous)" };
    const entry = map.findEntry(frame.lineNumber, frame.columnNumber);
    const source = entry?.originalSource
      ? path.relative(root, new URL(entry.originalSource, "file:///").pathname.replace(/^.*?(?=\/(src|node_modules)\/)/, root))
      : frame.url;
    return { file: source, name: `${frame.functionName || "(anonymous)"} ${source}:${(entry?.originalLine ?? frame.lineNumber) + 1}` };
  };
}

/** Every object's calls pass through these; the entry is the first file past them. */
const WRAPPERS = new Set(["src/metrics/object-meter.ts", "src/rpc-sessions/object-session.ts"]);

/**
 * A CPU profile's self time (µs) by source — node_modules grouped by package — and by function
 * (native frames named with their caller), by entry (the outermost src/ file on the sample's
 * stack, or the frame's own name when none is), with the sampled total.
 */
export function selfTimes(profile, map) {
  const intervals = new Map();
  for (let i = 0; i < profile.samples.length; i++) intervals.set(profile.samples[i], (intervals.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0));
  const byFile = new Map();
  const byFunction = new Map();
  const byEntry = new Map();
  let total = 0;
  const parents = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node);
  // The outermost frame of src/ on a sample's stack: which object's (or the Worker's) entry the
  // time was spent under, whatever helper it ran in.
  const entries = new Map();
  const entryOf = (node) => {
    if (entries.has(node.id)) return entries.get(node.id);
    const parent = parents.get(node.id);
    const outer = parent ? entryOf(parent) : undefined;
    const own = map(node.callFrame).file;
    const entry = outer ?? (own.startsWith("src/") && !WRAPPERS.has(own) ? own : undefined);
    entries.set(node.id, entry);
    return entry;
  };
  for (const node of profile.nodes) {
    const us = intervals.get(node.id) ?? 0;
    if (!us) continue;
    total += us;
    let { file, name } = map(node.callFrame);
    if (!node.callFrame.url && !name.startsWith("(") && parents.get(node.id)) name = `${name} ← ${map(parents.get(node.id).callFrame).name}`;
    else if (name === "(anonymous)" && !node.callFrame.url && parents.get(node.id)) name = `(native) ← ${map(parents.get(node.id).callFrame).name}`;
    const group = file.startsWith("node_modules/")
      ? file
          .split("/")
          .slice(0, file.split("/")[1].startsWith("@") ? 3 : 2)
          .join("/")
      : file;
    byFile.set(group, (byFile.get(group) ?? 0) + us);
    byFunction.set(name, (byFunction.get(name) ?? 0) + us);
    const entry = entryOf(node) ?? file;
    byEntry.set(entry, (byEntry.get(entry) ?? 0) + us);
  }
  return { total, byFile, byFunction, byEntry };
}

/**
 * Starts V8's sampling profiler on the bench's service (its inspector on `port`); `stop()` saves
 * the profile as .bench/profile-{name}.cpuprofile and answers it.
 */
export async function startProfiler(port, name) {
  const client = inspector(`ws://127.0.0.1:${port}/core:user:service`);
  await client.opened;
  await client.send("Profiler.enable");
  await client.send("Profiler.setSamplingInterval", { interval: 200 });
  await client.send("Profiler.start");
  return {
    stop: async () => {
      const { profile } = await client.send("Profiler.stop");
      client.close();
      writeFileSync(path.join(work, `profile-${name}.cpuprofile`), JSON.stringify(profile));
      return profile;
    },
  };
}

/** µs a unit of work (a batch) by entry, by file and by function (top 15 each), idle left out. */
export function profileLines(profile, script, batches) {
  const { total, byFile, byEntry, byFunction } = selfTimes(profile, sourceMapper(script));
  const perBatch = (map) =>
    [...map]
      .filter(([name]) => name !== "(idle)")
      .sort((a, b) => b[1] - a[1])
      .slice(0, 15)
      .map(([name, us]) => [name, Math.round((10 * us) / Math.max(1, batches)) / 10]);
  const idle = byFile.get("(idle)") ?? 0;
  return {
    sampledUsPerBatch: Math.round((total - idle) / Math.max(1, batches)),
    byEntry: perBatch(byEntry),
    byFile: perBatch(byFile),
    byFunction: perBatch(byFunction),
  };
}
