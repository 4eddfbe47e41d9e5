// The guardrail scan as a task of the shared worker-thread pool: the same functions the main thread
// runs inline, so a result is identical wherever the scan ran.
import { definePoolTask } from '../common/worker-pool.js';
import type { GuardrailsConfigLike } from './guardrails-config.js';
import type { PreLlmResult } from './guardrails.types.js';
import { runPreLlm, runPreLlmOnInput, totalChars, type PreLlmInputResult } from './run-pre-llm.js';

export type ScanInput = { kind: 'text'; content: string; config: GuardrailsConfigLike } | { kind: 'input'; input: unknown; config: GuardrailsConfigLike };

export const scanTask = definePoolTask<ScanInput, PreLlmResult | PreLlmInputResult<unknown>>({
  name: 'guardrails.scan',
  run: (task) => (task.kind === 'text' ? runPreLlm(task.content, task.config) : runPreLlmOnInput(task.input, task.config)),
  size: (task) => (task.kind === 'text' ? task.content.length : totalChars(task.input, 0)),
  // UTF-16 units: four times the largest max_input_chars a tenant may set (1,000,000); the body
  // limit (1 MiB) keeps requests far below it.
  maxSize: 4_000_000,
});
