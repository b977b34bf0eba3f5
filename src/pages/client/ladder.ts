import type { Level } from "../../../client/src/index";
import { formatDecimal, parseDecimal, subtract } from "../../core/decimal";

/** The market page's arithmetic on a book's levels; the book itself is the client package's LocalBook. */

/** `a − b` for decimal strings, exactly, at the larger of their scales (the spread, for display). */
export function subtractDecimal(a: string, b: string): string {
  return formatDecimal(subtract(parseDecimal(a), parseDecimal(b)));
}

/** Cumulative quantity from the touch outwards, for the depth chart (numbers: it is a drawing). */
export function cumulativeDepth(levels: readonly Level[]): [price: number, cumulative: number][] {
  let total = 0;
  return levels.map(([price, quantity]) => [Number(price), (total += Number(quantity))]);
}
