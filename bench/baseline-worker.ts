import { Hono } from "hono";

// The ceiling of this runtime on this machine: a bare Hono Worker answering a small JSON body.
const app = new Hono();
app.get("*", (c) => c.json({ symbol: "BTCUSDT", lastPrice: "97000.10", volume24h: "1.00000" }));

export default app;
