import type { TestProject } from "vitest/node";
import { startService } from "../../scripts/service.mjs";

declare module "vitest" {
  export interface ProvidedContext {
    baseUrl: string;
  }
}

/** Starts the service exactly as the README says (`npm start`) and hands its URL to the end-to-end tests. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const { baseUrl, stop } = await startService();
  project.provide("baseUrl", baseUrl);
  return stop;
}
