/**
 * `work`, or a rejection (`expiry`) once `ms` have passed without it: the caller stops waiting,
 * the work goes on (its result, if it comes, is dropped).
 *
 * @example
 * const answer = await withTimeout(host.answer(market, question), 2_000);
 */
export function withTimeout<T>(work: Promise<T>, ms: number, expiry: Error = new Error(`no answer within ${ms} ms`)): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(expiry), ms);
  });
  return Promise.race([work, expired]).finally(() => clearTimeout(timer));
}
