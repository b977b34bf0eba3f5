/**
 * A 24-hour record without its window's bounds. They are the moment the answer was made
 * (`openTime` its minute less 24 h, `closeTime` the moment itself): two answers of the same data
 * made a minute's turn apart differ in them and in nothing else, so tests comparing answers made
 * at different moments compare the rest.
 */
export function withoutMoment<T extends object>(record: T | undefined): Omit<T, "openTime" | "closeTime"> & { openTime: 0; closeTime: 0 } {
  return { ...(record as T), openTime: 0, closeTime: 0 };
}
