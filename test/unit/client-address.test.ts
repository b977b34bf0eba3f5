import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allowListAdmits, canonicalIp, clientIp, clientPrincipal, ipPrincipal, isValidCidr, NO_ADDRESS } from "../../src/access/client-address";

const octets = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255));
const groups = fc.array(fc.nat(0xffff), { minLength: 8, maxLength: 8 });
const hex = (n: number, pad: boolean, upper: boolean) => {
  const text = n.toString(16).padStart(pad ? 4 : 1, "0");
  return upper ? text.toUpperCase() : text;
};

/** Every way a client (or a proxy) might write one IPv4 address. */
function ipv4Spellings(parts: readonly number[]): string[] {
  const dotted = parts.join(".");
  const high = (parts[0]! << 8) | parts[1]!;
  const low = (parts[2]! << 8) | parts[3]!;
  return [
    dotted,
    parts.map((p) => String(p).padStart(3, "0")).join("."),
    `::ffff:${dotted}`,
    `::FFFF:${dotted}`,
    `0:0:0:0:0:ffff:${dotted}`,
    `::ffff:${hex(high, false, false)}:${hex(low, false, false)}`,
    `0000:0000:0000:0000:0000:FFFF:${hex(high, true, true)}:${hex(low, true, true)}`,
    `${dotted}:443`,
    `[::ffff:${dotted}]:8443`,
    ` ${dotted} , 203.0.113.9`,
  ];
}

/** Every way one IPv6 address may be written: compressed or not, any case, zero-padded, bracketed, with a zone. */
function ipv6Spellings(parts: readonly number[]): string[] {
  const full = parts.map((p) => hex(p, true, false)).join(":");
  const short = parts.map((p) => hex(p, false, true)).join(":");
  const canonical = canonicalIp(full)!;
  return [full, full.toUpperCase(), short, canonical, `[${canonical}]:443`, `${canonical}%eth0`, `${canonical}, 2001:db8::1`];
}

describe("client addresses: one address, one principal", () => {
  it("every spelling of one IPv4 address is the same canonical address and principal", () => {
    fc.assert(
      fc.property(octets, (parts) => {
        const spellings = ipv4Spellings(parts);
        const seen = new Set(spellings.map((s) => canonicalIp(s)));
        expect([...seen], `spellings of ${parts.join(".")}: ${spellings.join(" | ")}`).toEqual([parts.join(".")]);
        expect(ipPrincipal(parts.join("."))).toBe(`ip:${parts.join(".")}`);
      }),
    );
  });

  it("every spelling of one IPv6 address is the same canonical address", () => {
    fc.assert(
      fc.property(
        groups.filter((g) => !(g.slice(0, 5).every((p) => p === 0) && g[5] === 0xffff)),
        (parts) => {
          const spellings = ipv6Spellings(parts);
          expect([...new Set(spellings.map((s) => canonicalIp(s)))], spellings.join(" | ")).toHaveLength(1);
        },
      ),
    );
  });

  it("every address of one /64 is one principal; another /64 is another", () => {
    fc.assert(
      fc.property(groups, groups, (a, b) => {
        const network = a.slice(0, 4);
        fc.pre(!network.every((p) => p === 0));
        const first = canonicalIp([...network, ...a.slice(4)].map((p) => p.toString(16)).join(":"))!;
        const second = canonicalIp([...network, ...b.slice(4)].map((p) => p.toString(16)).join(":"))!;
        fc.pre(first.includes(":") && second.includes(":"));
        expect(ipPrincipal(first), `${first} and ${second}`).toBe(ipPrincipal(second));
        const other = canonicalIp([(network[0]! + 1) % 0x10000, ...network.slice(1), ...a.slice(4)].map((p) => p.toString(16)).join(":"))!;
        if (other.includes(":")) expect(ipPrincipal(other)).not.toBe(ipPrincipal(first));
      }),
    );
    expect(ipPrincipal("2001:db8:1:2:aaaa::1")).toBe("ip:2001:db8:1:2::/64");
  });

  it("what is no address falls into one shared bucket, never a fresh one per spelling", () => {
    for (const bad of [null, "", "unknown", "256.1.1.1", "1.2.3", "0x7f.1", "1::2::3", "example.com", "1.2.3.4/24", "::ffff:1.2.3.256"]) {
      expect(canonicalIp(bad), String(bad)).toBeNull();
    }
    const request = (value?: string) => new Request("http://x/", value === undefined ? {} : { headers: { "CF-Connecting-IP": value } });
    const principals = new Set([undefined, "", "garbage", "1.2.3.4.5", "::g", "999.1.1.1"].map((value) => ipPrincipal(clientIp(request(value)))));
    expect([...principals]).toEqual([`ip:${NO_ADDRESS}`]);
  });
});

describe("IP allow-lists: IPv4, IPv6 and CIDR edges", () => {
  it("a /24 admits its first and last address and nothing outside", () => {
    expect(allowListAdmits(["192.0.2.0/24"], "192.0.2.0")).toBe(true);
    expect(allowListAdmits(["192.0.2.0/24"], "192.0.2.255")).toBe(true);
    expect(allowListAdmits(["192.0.2.0/24"], "192.0.1.255")).toBe(false);
    expect(allowListAdmits(["192.0.2.0/24"], "192.0.3.0")).toBe(false);
  });

  it("IPv6 ranges, compressed forms and IPv4-mapped addresses (canonical first)", () => {
    expect(allowListAdmits(["2001:db8::/32"], canonicalIp("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff")!)).toBe(true);
    expect(allowListAdmits(["2001:db8::/32"], "2001:db9::")).toBe(false);
    expect(allowListAdmits(["::1"], canonicalIp("0:0:0:0:0:0:0:1")!)).toBe(true);
    expect(allowListAdmits(["10.0.0.0/8"], canonicalIp("::ffff:10.1.2.3")!)).toBe(true);
    expect(allowListAdmits(["::ffff:10.0.0.1"], canonicalIp("10.0.0.1")!)).toBe(true);
    expect(allowListAdmits(["10.0.0.0/8"], "2001:db8::1")).toBe(false);
    expect(allowListAdmits(["10.0.0.0/8"], NO_ADDRESS)).toBe(false);
  });

  it("an empty list admits anyone; /0 admits the whole family", () => {
    expect(allowListAdmits([], "198.51.100.7")).toBe(true);
    expect(allowListAdmits(["0.0.0.0/0"], "198.51.100.7")).toBe(true);
    expect(allowListAdmits(["::/0"], "198.51.100.7")).toBe(false);
  });

  it("refuses malformed ranges", () => {
    for (const bad of ["", "256.0.0.1", "1.2.3", "1.2.3.4/33", "::1/129", "1::2::3", "2001:db8::/x", "a.b.c.d", "1.2.3.4/24/1", "1.2.3.4/"]) {
      expect(isValidCidr(bad), bad).toBe(false);
    }
  });

  it("every IPv4 address is inside its own /32 and /p network and outside a neighbour /32", () => {
    fc.assert(
      fc.property(octets, fc.integer({ min: 0, max: 32 }), (parts, prefix) => {
        const address = parts.join(".");
        expect(allowListAdmits([`${address}/32`], address)).toBe(true);
        expect(allowListAdmits([`${address}/${prefix}`], address)).toBe(true);
        const value = parts.reduce((n, p) => n * 256 + p, 0);
        const neighbour = (value + 1) % 2 ** 32;
        const text = [24, 16, 8, 0].map((shift) => String(Math.floor(neighbour / 2 ** shift) % 256)).join(".");
        expect(allowListAdmits([`${address}/32`], text)).toBe(false);
      }),
    );
  });
});

describe("clientPrincipal: the per-isolate memo of a header's principal", () => {
  it("gives what parsing gives, for any header text, the first time and every time after", () => {
    const spellings = fc.oneof(
      fc.ipV4(),
      fc.ipV6(),
      fc.ipV4().map((ip) => `::ffff:${ip}`),
      fc.ipV4().map((ip) => `${ip}:443`),
      fc.string({ maxLength: 40 }),
    );
    fc.assert(
      fc.property(spellings, (raw) => {
        const request = new Request("http://service.test/", { headers: { "CF-Connecting-IP": raw } });
        const expected = ipPrincipal(canonicalIp(raw) ?? NO_ADDRESS);
        expect(clientPrincipal(request), raw).toBe(expected);
        expect(clientPrincipal(request), `${raw}, remembered`).toBe(expected);
      }),
    );
  });
});
