import ipaddr from "ipaddr.js";

/**
 * Client addresses, canonical: one address has one spelling, so per-IP limits, stream slots
 * and allow-lists cannot be dodged by writing it differently.
 *
 * - IPv4 is dotted decimal (`198.18.1.7`; leading zeros in a part are read as decimal).
 * - IPv4-mapped IPv6 (`::ffff:198.18.1.7`, `::ffff:c612:107`, expanded forms) is the IPv4 address.
 * - Other IPv6 is RFC 5952 text (`2001:db8::1`), without a zone.
 * - A port (`198.18.1.7:443`, `[2001:db8::1]:443`) or a list (`a, b`: the first) is tolerated.
 *
 * Anything else is no address at all: `null`, which every limit counts in one shared bucket.
 */
export function canonicalIp(raw: string | null | undefined): string | null {
  if (!raw) return null;
  let text = raw.split(",")[0]!.trim();
  if (text.length === 0 || text.length > 100) return null;
  const bracketed = /^\[([^\]]+)\](?::\d{1,5})?$/.exec(text);
  if (bracketed) text = bracketed[1]!;
  else if (/^[\d.]+:\d{1,5}$/.test(text)) text = text.slice(0, text.lastIndexOf(":"));
  text = text.replace(/%.*$/, "");
  if (/^\d{1,3}(\.\d{1,3}){3}$/.test(text)) {
    const octets = text.split(".").map(Number);
    return octets.every((octet) => octet <= 255) ? octets.join(".") : null;
  }
  if (!text.includes(":") || !ipaddr.IPv6.isValid(text)) return null;
  const address = ipaddr.IPv6.parse(text);
  return address.isIPv4MappedAddress() ? address.toIPv4Address().toString() : address.toRFC5952String();
}

/** The shared bucket of requests whose `CF-Connecting-IP` is missing or no address. */
export const NO_ADDRESS = "unknown";

/** The client's canonical address from `CF-Connecting-IP` (Cloudflare sets it; clients cannot), or {@link NO_ADDRESS}. */
export function clientIp(request: Request): string {
  return canonicalIp(request.headers.get("CF-Connecting-IP")) ?? NO_ADDRESS;
}

/** Principals by the header's raw text, per isolate: parsing an address costs more than a lookup. */
const principalsByHeader = new Map<string, string>();
/** Bounded, so a flood of distinct spellings cannot grow it without end. */
const MAX_REMEMBERED = 10_000;

/**
 * The principal a request's client address is counted as (`ip:…`): {@link ipPrincipal} of
 * {@link clientIp}, remembered per spelling of the header.
 */
export function clientPrincipal(request: Request): string {
  const raw = request.headers.get("CF-Connecting-IP") ?? "";
  let principal = principalsByHeader.get(raw);
  if (principal === undefined) {
    principal = ipPrincipal(canonicalIp(raw) ?? NO_ADDRESS);
    if (principalsByHeader.size >= MAX_REMEMBERED) principalsByHeader.clear();
    principalsByHeader.set(raw, principal);
  }
  return principal;
}

/**
 * The principal a client address is counted as: an IPv4 address alone, an IPv6 address by
 * its /64 (one subscriber's network: a host there can take any of 2^64 addresses at will).
 *
 * @example
 * ipPrincipal("2001:db8:1:2:aaaa::1") // "ip:2001:db8:1:2::/64"
 */
export function ipPrincipal(ip: string): string {
  if (!ip.includes(":")) return `ip:${ip}`;
  const parts = ipaddr.IPv6.parse(ip).parts.slice(0, 4);
  return `ip:${new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toRFC5952String()}/64`;
}

/** A single address or a CIDR range, IPv4 or IPv6, as an allow-list entry takes it. */
export function isValidCidr(text: string): boolean {
  return rangeOf(text) !== null;
}

function rangeOf(text: string): [ipaddr.IPv4 | ipaddr.IPv6, number] | null {
  const [address, prefix, extra] = text.trim().split("/");
  if (extra !== undefined) return null;
  const canonical = canonicalIp(address);
  if (canonical === null) return null;
  const parsed = ipaddr.parse(canonical);
  const bits = prefix === undefined ? (parsed.kind() === "ipv4" ? 32 : 128) : Number(prefix);
  if ((prefix !== undefined && !/^\d{1,3}$/.test(prefix)) || bits > (parsed.kind() === "ipv4" ? 32 : 128)) return null;
  return [parsed, bits];
}

/** True when the allow-list is empty or one of its entries contains the (canonical) address. */
export function allowListAdmits(cidrs: readonly string[], ip: string): boolean {
  if (cidrs.length === 0) return true;
  if (ip === NO_ADDRESS) return false;
  const address = ipaddr.parse(ip);
  return cidrs.some((text) => {
    const range = rangeOf(text);
    return range !== null && range[0].kind() === address.kind() && address.match(range);
  });
}
