// Rules for the tests themselves, run with every `npm test`: no test asserts on the wall clock (a
// loaded machine makes every elapsed-time bound a coin toss; speed is measured in test/bench), and
// no test waits a fixed time where it could wait for a condition (test/support/wait-for.ts). The few
// fixed waits left say why on the line above: `// Sleep: <reason>`.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Fixed waits allowed in the whole suite, each with its reason. */
const MAX_FIXED_SLEEPS = 4;

/** A reading of the clock to time the work under test, or an assertion on such a reading. */
const CLOCK = [
  /performance\.now\(\)/,
  // `Date.now() - started` (an elapsed time); `Date.now() - 60_000` is a timestamp in the data.
  /Date\.now\(\)\s*-\s*[A-Za-z_$]/,
  /expect\([^)]*\b(worstMs|elapsed\w*|\w*Ms|ms|seconds)\)\s*\.\s*toBe(Less|Greater)/,
  // CPU time is a clock too: under load it grows with every context switch.
  /process\.cpuUsage\(/,
  // The test's clock against a time the server stamped: `expect(Date.now()).toBeLessThan(resumeAt)`.
  /expect\(\s*Date\.now\(\)\s*\)/,
];

/** A fixed wait: a promise resolved by a timer, or timers/promises' setTimeout. */
const SLEEP = [/new Promise\S*\s*\(\s*\(?\s*(r|res|resolve)\s*\)?\s*=>\s*setTimeout\(/, /\bsleep\(\s*\d/, /from 'node:timers\/promises'/];

function listTests(): string[] {
  return readdirSync(path.join(root, 'test'), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.test\.tsx?$/.test(entry.name))
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)))
    .filter((file) => !file.startsWith('test/bench/') && file !== 'test/test-rules.test.ts');
}

function findLines(file: string, patterns: RegExp[]): { line: number; text: string; reason: boolean }[] {
  const lines = readFileSync(path.join(root, file), 'utf8').split('\n');
  const found: { line: number; text: string; reason: boolean }[] = [];
  lines.forEach((text, i) => {
    if (/^\s*(\/\/|\*)/.test(text) || !patterns.some((p) => p.test(text))) return;
    const reason = /\/\/ Sleep: \S/.test(text) || /^\s*\/\/ Sleep: \S/.test(lines[i - 1] ?? '');
    found.push({ line: i + 1, text: text.trim().slice(0, 140), reason });
  });
  return found;
}

/** Every line of the test files that `breaks` reports, as `file:line: text`. */
function census(kind: string, breaks: (file: string) => string[]): string[] {
  const found = listTests().flatMap(breaks);
  console.log(`${kind}: ${found.length}${found.length ? `\n  ${found.join('\n  ')}` : ''}`);
  return found;
}

describe('test rules', () => {
  it('no test asserts on the wall clock (speed is measured in test/bench)', () => {
    expect(census('clocks', (file) => findLines(file, CLOCK).map((f) => `${file}:${f.line}: ${f.text}`))).toEqual([]);
  });

  it(`fixed waits: at most ${MAX_FIXED_SLEEPS} in the suite, each with a reason (// Sleep: why)`, () => {
    const unexplained = census('fixed waits without a reason', (file) =>
      findLines(file, SLEEP)
        .filter((f) => !f.reason)
        .map((f) => `${file}:${f.line}: ${f.text}`),
    );
    expect(unexplained).toEqual([]);
    const explained = census('fixed waits with a reason', (file) => findLines(file, SLEEP).filter((f) => f.reason).map((f) => `${file}:${f.line}: ${f.text}`));
    expect(explained.length, explained.join('\n')).toBeLessThanOrEqual(MAX_FIXED_SLEEPS);
  });
});
