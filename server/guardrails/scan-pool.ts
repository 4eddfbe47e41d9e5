// Keeps long guardrail scans off the event loop. The scan is linear, but a megabyte still costs
// a hundred milliseconds or more of CPU on a small server, during which no other request (of any
// tenant) would be served. Inputs over SCAN_INLINE_MAX_CHARS go to a small worker-thread pool;
// smaller ones, the usual resume or job description, run inline: the loop is held a few
// milliseconds at most, and no thread has to be started or kept in memory for them. The pool is
// created on the first large input (piscina itself is loaded then: a server that never sees one
// does not pay for it), keeps no thread once idle, and is destroyed with the server (closeScanPool).
import { availableParallelism } from 'node:os';
import type { Piscina } from 'piscina';
import { resolveGuardrailsConfig, type GuardrailsConfigLike } from './guardrails-config.js';
import type { GuardrailIssue, PreLlmResult } from './guardrails.types.js';
import { observeGuardrail } from '../observability/telemetry.js';
import { charLength, runPreLlm, runPreLlmOnInput, totalChars, type PreLlmInputResult } from './run-pre-llm.js';
import type { ScanTask } from './scan-worker.js';

/**
 * Inputs up to this many UTF-16 units are scanned inline: at most ~15 ms of CPU on a slow 2-core
 * server (dense realistic text), a pause other requests can afford. The request itself would not
 * be answered sooner from a thread (the scan takes as long there, plus the copies both ways).
 */
export const SCAN_INLINE_MAX_CHARS = 64 * 1024;
/** A thread that had no task for this long exits, so an idle server holds no scan thread. */
const IDLE_TIMEOUT_MS = 30_000;
const SCAN_THREAD_NICENESS = process.platform === 'win32' ? 0 : 10;

type ScanPool = Piscina<ScanTask, unknown>;

/** The pool being created or created; `created` once it exists (for its counters). */
let pool: Promise<ScanPool> | null = null;
let created: ScanPool | null = null;

/**
 * The worker module: `scan-worker.js` next to this file when compiled; under a TypeScript loader
 * (this module is a `.ts` file) a bootstrap that registers the loader in the thread first.
 */
function workerFilename(): string {
  const typescript = new URL(import.meta.url).pathname.endsWith('.ts');
  return new URL(typescript ? './scan-worker-ts.mjs' : './scan-worker.js', import.meta.url).href;
}

function scanPool(): Promise<ScanPool> {
  pool ??= import('piscina').then(
    ({ Piscina }) =>
      (created = new Piscina<ScanTask, unknown>({
        filename: workerFilename(),
        minThreads: 0,
        // One thread per spare core, at most two: scans queue rather than starve the request threads.
        maxThreads: Math.max(1, Math.min(2, availableParallelism() - 1)),
        idleTimeout: IDLE_TIMEOUT_MS,
        // A lower priority for the scan threads: on a busy machine the request threads get the CPU
        // first, so a megabyte being scanned does not slow other tenants' requests (Linux and macOS,
        // through piscina's optional native helper; without it the priority stays as it is).
        niceIncrement: SCAN_THREAD_NICENESS,
      })),
    (err: unknown) => {
      pool = null; // the next large input tries again
      throw err;
    },
  );
  return pool;
}

/** Whether a scan of `length` characters under `config` goes to the pool (over the length limit it is refused without a scan). */
function usesPool(length: number, config: GuardrailsConfigLike): boolean {
  if (length <= SCAN_INLINE_MAX_CHARS) return false;
  const { maxInputChars } = resolveGuardrailsConfig(config);
  return maxInputChars === null || length <= maxInputChars;
}

/** runPreLlm, off the event loop when the content is large. Same result either way. */
export async function scanText(content: string, config?: GuardrailsConfigLike): Promise<PreLlmResult> {
  const result = content.length <= SCAN_INLINE_MAX_CHARS || !usesPool(charLength(content), config)
    ? runPreLlm(content, config)
    : ((await (await scanPool()).run({ kind: 'text', content, config: config ?? null })) as PreLlmResult);
  observeGuardrail('pre_llm', guardrailOutcome(result));
  return result;
}

/** runPreLlmOnInput, off the event loop when the strings of the input are large. Same result either way. */
export async function scanInput<T>(input: T, config?: GuardrailsConfigLike): Promise<PreLlmInputResult<T>> {
  const result = !usesPool(totalChars(input, 0), config)
    ? runPreLlmOnInput(input, config)
    : ((await (await scanPool()).run({ kind: 'input', input, config: config ?? null })) as PreLlmInputResult<T>);
  observeGuardrail('pre_llm', guardrailOutcome(result));
  return result;
}

/** Scans the current pool has completed (0 without a pool): tells whether a scan ran off the event loop. */
export function scanPoolCompleted(): number {
  return created?.completed ?? 0;
}

/** Stops the scan threads (server shutdown); a later large input starts a new pool. */
export async function closeScanPool(): Promise<void> {
  const current = pool;
  pool = null;
  const instance = await current?.catch(() => null);
  if (!instance) return;
  if (created === instance) created = null;
  await instance.destroy();
}

/**
 * A scan's verdict as metrics count it: blocked, else redacted (something was changed), else flagged,
 * else passed.
 */
export function guardrailOutcome(result: { passed: boolean; issues: GuardrailIssue[] }): string {
  if (!result.passed) return 'blocked';
  if (result.issues.some((i) => i.action_taken === 'modified')) return 'redacted';
  if (result.issues.some((i) => i.action_taken === 'flagged')) return 'flagged';
  return 'passed';
}
