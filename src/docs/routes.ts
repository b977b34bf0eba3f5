import { Hono } from "hono";
import type { AppEnv } from "../http/env";
import { docsPage } from "./page";

const page = docsPage();

/** `/docs` and `/docs/errors` (the anchor target of every problem's `type`). */
export const docsRoutes = new Hono<AppEnv>().get("/", (c) => c.html(page)).get("/errors", (c) => c.html(page));
