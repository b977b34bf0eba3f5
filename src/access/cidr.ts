/**
 * IP allow-lists: IPv4 and IPv6 addresses and CIDR ranges, compared as big integers.
 */
export interface Cidr {
  version: 4 | 6;
  network: bigint;
  prefix: number;
}

function parseIpv4(text: string): bigint | null {
  const parts = text.split(".");
  if (parts.length !== 4) return null;
  let value = 0n;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part) || Number(part) > 255 || (part.length > 1 && part.startsWith("0"))) return null;
    value = (value << 8n) | BigInt(part);
  }
  return value;
}

function parseIpv6(text: string): bigint | null {
  if (!/^[0-9A-Fa-f:.]+$/.test(text) || text.split("::").length > 2) return null;
  let groups: string[];
  let tail: bigint | null = null;
  let body = text;
  // An embedded IPv4 tail (::ffff:192.0.2.1) stands for the last two groups.
  const lastColon = body.lastIndexOf(":");
  if (body.slice(lastColon + 1).includes(".")) {
    tail = parseIpv4(body.slice(lastColon + 1));
    if (tail === null) return null;
    body = body.slice(0, lastColon + 1) + "0:0";
  }
  const [head, rest] = body.split("::") as [string, string | undefined];
  const headGroups = head === "" ? [] : head.split(":");
  const restGroups = rest === undefined ? [] : rest === "" ? [] : rest.split(":");
  if (rest === undefined) groups = headGroups;
  else {
    const missing = 8 - headGroups.length - restGroups.length;
    if (missing < 1) return null;
    groups = [...headGroups, ...Array<string>(missing).fill("0"), ...restGroups];
  }
  if (groups.length !== 8) return null;
  let value = 0n;
  for (const group of groups) {
    if (!/^[0-9A-Fa-f]{1,4}$/.test(group)) return null;
    value = (value << 16n) | BigInt(`0x${group}`);
  }
  if (tail !== null) value = (value & ~0xffffffffn) | tail;
  return value;
}

export function parseIp(text: string): { version: 4 | 6; value: bigint } | null {
  const v4 = parseIpv4(text);
  if (v4 !== null) return { version: 4, value: v4 };
  const v6 = text.includes(":") ? parseIpv6(text) : null;
  return v6 === null ? null : { version: 6, value: v6 };
}

/** Parses `192.0.2.0/24`, `2001:db8::/32` or a single address (a /32 or /128). */
export function parseCidr(text: string): Cidr | null {
  const [address, prefixText, extra] = text.trim().split("/");
  if (extra !== undefined || address === undefined) return null;
  const ip = parseIp(address);
  if (!ip) return null;
  const bits = ip.version === 4 ? 32 : 128;
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) return null;
  const prefix = prefixText === undefined ? bits : Number(prefixText);
  if (prefix > bits) return null;
  const mask = prefix === 0 ? 0n : ((1n << BigInt(prefix)) - 1n) << BigInt(bits - prefix);
  return { version: ip.version, network: ip.value & mask, prefix };
}

export function cidrContains(cidr: Cidr, address: string): boolean {
  const ip = parseIp(address);
  if (!ip) return false;
  // An IPv4-mapped IPv6 address (::ffff:a.b.c.d) is the IPv4 address it maps.
  let { version, value } = ip;
  if (version === 6 && cidr.version === 4 && value >> 32n === 0xffffn) {
    version = 4;
    value &= 0xffffffffn;
  }
  if (version !== cidr.version) return false;
  const bits = version === 4 ? 32 : 128;
  const mask = cidr.prefix === 0 ? 0n : ((1n << BigInt(cidr.prefix)) - 1n) << BigInt(bits - cidr.prefix);
  return (value & mask) === cidr.network;
}

export function allowListAdmits(cidrs: readonly string[], address: string): boolean {
  return cidrs.length === 0 || cidrs.some((text) => {
    const cidr = parseCidr(text);
    return cidr !== null && cidrContains(cidr, address);
  });
}
