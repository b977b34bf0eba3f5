/** Markets a group: a group's markets share one host object and one relay (docs/design.md#market-hosts). */
export const GROUP_SIZE = 64;

/** A market's group: markets are grouped in listing order (their registry ordinal), 64 a group. */
export function groupOf(market: { ordinal: number }): number {
  return Math.floor(market.ordinal / GROUP_SIZE);
}
