#!/usr/bin/env node
// The README's test command: runs the whole vitest suite and ends with `N passed, N failed`.
import { spawn } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { ensureModernNode, projectRoot } from '../bin/launch.mjs';

if (ensureModernNode(new URL(import.meta.url).pathname)) {
  // One report file per run: concurrent runs must not read each other's totals.
  const report = path.join(projectRoot, `.test-results-${process.pid}.json`);
  rmSync(report, { force: true });
  const vitest = path.join(projectRoot, 'node_modules', 'vitest', 'vitest.mjs');
  const args = [vitest, 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...process.argv.slice(2)];
  const child = spawn(process.execPath, args, { stdio: 'inherit', cwd: projectRoot });
  child.on('exit', (code) => {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    try {
      const results = JSON.parse(readFileSync(report, 'utf8'));
      passed = results.numPassedTests;
      failed = results.numFailedTests;
      skipped = results.numPendingTests + results.numTodoTests;
      // A file that failed to load counts as a failure even when it declared no test.
      failed += results.testResults.filter((f) => f.status === 'failed' && f.assertionResults.length === 0).length;
    } catch {
      failed = Math.max(failed, 1);
    }
    rmSync(report, { force: true });
    const exitCode = code === 0 && failed === 0 ? 0 : code || 1;
    // The last line is exactly `N passed, N failed`; skipped tests (those needing pgvector) are told just before.
    if (skipped) console.log(`${skipped} skipped`);
    console.log(`${passed} passed, ${failed} failed`);
    process.exit(exitCode);
  });
}
