import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allowListAdmits, parseCidr, parseIp } from "../../src/access/cidr";

const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((parts) => parts.join("."));

describe("IP allow-lists: IPv4, IPv6 and CIDR edges", () => {
  it("a /24 admits its first and last address and nothing outside", () => {
    expect(allowListAdmits(["192.0.2.0/24"], "192.0.2.0")).toBe(true);
    expect(allowListAdmits(["192.0.2.0/24"], "192.0.2.255")).toBe(true);
    expect(allowListAdmits(["192.0.2.0/24"], "192.0.1.255")).toBe(false);
    expect(allowListAdmits(["192.0.2.0/24"], "192.0.3.0")).toBe(false);
  });

  it("IPv6 ranges, compressed forms and IPv4-mapped addresses", () => {
    expect(allowListAdmits(["2001:db8::/32"], "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff")).toBe(true);
    expect(allowListAdmits(["2001:db8::/32"], "2001:db9::")).toBe(false);
    expect(allowListAdmits(["::1"], "0:0:0:0:0:0:0:1")).toBe(true);
    expect(allowListAdmits(["10.0.0.0/8"], "::ffff:10.1.2.3")).toBe(true);
    expect(allowListAdmits(["10.0.0.0/8"], "2001:db8::1")).toBe(false);
  });

  it("an empty list admits anyone; /0 admits the whole family", () => {
    expect(allowListAdmits([], "198.51.100.7")).toBe(true);
    expect(allowListAdmits(["0.0.0.0/0"], "198.51.100.7")).toBe(true);
    expect(allowListAdmits(["::/0"], "198.51.100.7")).toBe(false);
  });

  it("refuses malformed ranges", () => {
    for (const bad of ["", "256.0.0.1", "1.2.3", "01.2.3.4", "1.2.3.4/33", "::1/129", "1::2::3", "2001:db8::/x", "a.b.c.d", "1.2.3.4/24/1"]) {
      expect(parseCidr(bad), bad).toBeNull();
    }
  });

  it("every IPv4 address is inside its own /32 and /p network and outside a neighbour /32", () => {
    fc.assert(
      fc.property(ipv4, fc.integer({ min: 0, max: 32 }), (address, prefix) => {
        expect(allowListAdmits([`${address}/32`], address)).toBe(true);
        expect(allowListAdmits([`${address}/${prefix}`], address)).toBe(true);
        const value = parseIp(address)!.value;
        const neighbour = (value + 1n) % 2n ** 32n;
        const text = [24n, 16n, 8n, 0n].map((shift) => String((neighbour >> shift) & 255n)).join(".");
        expect(allowListAdmits([`${address}/32`], text)).toBe(false);
      }),
    );
  });
});
