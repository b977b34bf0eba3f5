/**
 * A ring table's rows for a run of numbers: row `n` lives in slot `n % slots`, written over when
 * the ring comes round, so the rows of `first`…`last` are one range of slots, or two where the ring
 * wraps — read by the slot key, not by scanning the ring (the group's journal, a market's seconds).
 *
 * @example
 * sql.exec(`SELECT body FROM journal WHERE ${ringSlots(from, last, 4_096)} AND n >= ?`, from);
 */
export function ringSlots(first: number, last: number, slots: number): string {
  if (last < first) return "0 = 1";
  if (last - first + 1 >= slots) return "1 = 1";
  const [a, b] = [first % slots, last % slots];
  if (a === b) return `slot = ${a}`;
  return a < b ? `slot BETWEEN ${a} AND ${b}` : `(slot >= ${a} OR slot <= ${b})`;
}
