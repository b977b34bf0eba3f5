// The service's operator metrics as the benches read them (docs/operations.md#metrics).

/** The counters of /admin/metrics as series → value. */
export async function scrape(url, token) {
  const response = await fetch(`${url}/admin/metrics`, { headers: { Authorization: `Bearer ${token}`, "CF-Connecting-IP": "10.70.0.1" } });
  if (response.status !== 200) throw new Error(`/admin/metrics ${response.status}`);
  const series = new Map();
  for (const line of (await response.text()).split("\n")) {
    const match = /^(mds_[a-z_]+(?:\{[^}]*\})?) (-?[0-9.e+-]+)$/.exec(line);
    if (match) series.set(match[1], Number(match[2]));
  }
  return series;
}
