/**
 * What the Workflows that build history files off the market hosts share
 * (docs/design.md#files-off-the-writer): a step's retries, the rounds an instance tries before it is
 * left failed, and how a file is counted built or failed (`mds_history_files_total`, /status).
 */

import type { WorkflowStep, WorkflowStepConfig } from "cloudflare:workers";
import { metricsObject } from "../core/object-ids";
import { DAY_MS } from "../domain/intervals";
import { logFailure } from "../logs/log";
import { seriesKey } from "../metrics/counts";

/** A step's retries: 10 s doubling, six times (about ten minutes); each step at most 5 minutes. */
export const FILE_STEP: WorkflowStepConfig = { retries: { limit: 6, delay: "10 seconds", backoff: "exponential" }, timeout: "5 minutes" };
/** Rounds of those retries, an hour apart, before an instance is left failed (reported; an operator may start it again). */
export const FILE_ROUNDS = 3;
/** A step's CSV is cut about here: a piece of each file per step, one R2 object, well within a step's memory. */
export const PIECE_CSV_BYTES = 16 * 1024 * 1024;

export type FileKind = "book" | "day" | "datasets";

/**
 * Files kept a while (an R2 lifecycle rule: the hourly book files, Tardis's datasets) and asked for
 * after are built again, at most once a week: the instance's id says the week.
 */
/** How long the asker of a file being built again is told to wait (`Retry-After`): an instance builds an hour or a day in well under a minute. */
export const BUILD_WAIT_S = 60;

export const againId = (id: string, now: number) => `${id}-again-${Math.floor(now / (7 * DAY_MS))}`;

/**
 * Creates an instance to build files again unless one of its id exists (handed already this week):
 * whether this call created it.
 *
 * @example
 * await createOnce(env.BOOK_FILES, againId(bookHourId(symbol, hour), Date.now()), params);
 */
export async function createOnce<P>(workflow: Workflow<P>, id: string, params: P): Promise<boolean> {
  try {
    await workflow.create({ id, params });
    return true;
  } catch {
    // Already handed (or the Workflow refused it): the asker is told to come back.
    return false;
  }
}

/**
 * Runs `attempt` in rounds: a round's steps are named apart (`named`), so a round after a failure
 * runs again those that failed, and those done before it are not. A failed round is reported; after
 * the last the instance fails with its error.
 *
 * @example
 * return inRounds(step, (named) => step.do(named("zip"), FILE_STEP, zip), (round, error) => reportFailed(env, id, "day", round, error));
 */
export async function inRounds<T>(
  step: WorkflowStep,
  attempt: (named: (name: string) => string) => Promise<T>,
  report: (round: number, error: unknown) => Promise<void>,
): Promise<T> {
  for (let round = 0; ; round++) {
    const named = (name: string) => (round === 0 ? name : `${name} (round ${round + 1})`);
    try {
      return await attempt(named);
    } catch (error) {
      await step.do(named("report failure"), FILE_STEP, () => report(round, error));
      if (round + 1 >= FILE_ROUNDS) throw error;
      await step.sleep(named("wait"), "1 hour");
    }
  }
}

/** An instance's files were built (or found empty): counted, and no longer listed as failing on /status. */
export async function reportBuilt(env: Env, id: string, kind: FileKind, result: "written" | "empty"): Promise<void> {
  await metricsObject(env).fileBuilt(id, seriesKey("mds_history_files_total", { kind, result }));
}

/** A round of an instance failed: logged, counted, and listed on /status until it is built. */
export async function reportFailed(env: Env, id: string, kind: FileKind, round: number, error: unknown): Promise<void> {
  const message = error instanceof Error ? error.message : String(error);
  logFailure(`${kind} files failed`, { id, round: round + 1, error: message });
  await metricsObject(env).fileFailed(id, message.slice(0, 300), seriesKey("mds_history_files_total", { kind, result: "failed" }));
}
