import type { TestProject } from "vitest/node";
import { startService } from "../../scripts/service.mjs";

declare module "vitest" {
  export interface ProvidedContext {
    baseUrl: string;
    /** The same service through `npm start`'s HTTPS door (scripts/dev-tls.mjs). */
    httpsUrl: string;
  }
}

/** Starts the service exactly as the README says (`npm start`) and hands its URL to the end-to-end tests. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const { baseUrl, httpsUrl, stop } = await startService();
  project.provide("baseUrl", baseUrl);
  project.provide("httpsUrl", httpsUrl);
  return stop;
}
