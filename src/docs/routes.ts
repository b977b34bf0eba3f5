import { Hono } from "hono";
import type { AppEnv } from "../env";
import { docsPage } from "./page";

const page = docsPage();

/** `/docs` and `/docs/errors` (the anchor target of every problem's `type`). */
export const docsRoutes = new Hono<AppEnv>().get("/docs", (c) => c.html(page)).get("/docs/errors", (c) => c.html(page));
