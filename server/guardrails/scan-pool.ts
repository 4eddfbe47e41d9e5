// Keeps long guardrail scans off the event loop. The scan is linear, but a megabyte still costs
// a hundred milliseconds or more of CPU on a small server, during which no other request (of any
// tenant) would be served. Inputs over SCAN_INLINE_MAX_CHARS go to the shared worker-thread pool
// (server/common/worker-pool.ts); smaller ones, the usual resume or job description, run inline:
// the loop is held a few milliseconds at most, and no thread has to be started or kept in memory
// for them.
import { runPoolTask } from '../common/worker-pool.js';
import { resolveGuardrailsConfig, type GuardrailsConfigLike } from './guardrails-config.js';
import type { GuardrailIssue, PreLlmResult } from './guardrails.types.js';
import { observeGuardrail } from '../observability/telemetry.js';
import { charLength, runPreLlm, runPreLlmOnInput, totalChars, type PreLlmInputResult } from './run-pre-llm.js';
import { scanTask } from './scan-task.js';

/**
 * Inputs up to this many UTF-16 units are scanned inline: at most ~15 ms of CPU on a slow 2-core
 * server (dense realistic text), a pause other requests can afford. The request itself would not
 * be answered sooner from a thread (the scan takes as long there, plus the copies both ways).
 */
export const SCAN_INLINE_MAX_CHARS = 64 * 1024;

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
    : ((await runPoolTask(scanTask, { kind: 'text', content, config: config ?? null })) as PreLlmResult);
  observeGuardrail('pre_llm', guardrailOutcome(result));
  return result;
}

/** runPreLlmOnInput, off the event loop when the strings of the input are large. Same result either way. */
export async function scanInput<T>(input: T, config?: GuardrailsConfigLike): Promise<PreLlmInputResult<T>> {
  const result = !usesPool(totalChars(input, 0), config)
    ? runPreLlmOnInput(input, config)
    : ((await runPoolTask(scanTask, { kind: 'input', input, config: config ?? null })) as PreLlmInputResult<T>);
  observeGuardrail('pre_llm', guardrailOutcome(result));
  return result;
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
