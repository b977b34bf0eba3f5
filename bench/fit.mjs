// Least-squares fits for the benches that turn a run's counts into per-unit figures (cost, the whole bill).

/** Least squares, none below zero: a coefficient fitted negative is held at 0 and the rest fitted again. */
export function fitNonNegative(rows, ys) {
  const free = rows[0].map((_, i) => i);
  for (;;) {
    const x = leastSquares(
      rows.map((r) => free.map((i) => r[i])),
      ys,
    );
    const negative = x.findIndex((v) => v < 0);
    if (negative === -1 || free.length === 1) {
      const all = rows[0].map(() => 0);
      for (const [k, i] of free.entries()) all[i] = Math.max(0, x[k]);
      return all;
    }
    free.splice(negative, 1);
  }
}

/** Least squares: x minimising |A·x − y|, by the normal equations. */
export function leastSquares(rows, ys) {
  const n = rows[0].length;
  const m = Array.from({ length: n }, (_, i) => [
    ...Array.from({ length: n }, (_, j) => rows.reduce((s, r) => s + r[i] * r[j], 0)),
    rows.reduce((s, r, k) => s + r[i] * ys[k], 0),
  ]);
  for (let col = 0; col < n; col++) {
    const pivot = m.slice(col).reduce((best, row, k) => (Math.abs(row[col]) > Math.abs(m[best][col]) ? col + k : best), col);
    [m[col], m[pivot]] = [m[pivot], m[col]];
    for (let r = 0; r < n; r++) {
      if (r === col) continue;
      const f = m[r][col] / m[col][col];
      for (let c = col; c <= n; c++) m[r][c] -= f * m[col][c];
    }
  }
  return m.map((row, i) => row[n] / row[i]);
}
