import type { Reporter, TestModule } from "vitest/node";

/**
 * Prints one plain closing line, `Tests: N passed, N failed, N skipped`, after vitest's own
 * summary, so CI logs can be read by tools that do not know vitest's format.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === "passed") counts.passed += 1;
        else if (state === "failed") counts.failed += 1;
        else counts.skipped += 1;
      }
      if (module.state() === "failed" && [...module.children.allTests()].length === 0) counts.failed += 1;
    }
    process.stdout.write(`\nTests: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`);
  }
}
