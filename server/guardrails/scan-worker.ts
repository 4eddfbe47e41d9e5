// Worker-thread side of the scan pool: the same functions the main thread runs inline, so a
// result is identical wherever the scan ran.
import type { GuardrailsConfigLike } from './guardrails-config.js';
import { runPreLlm, runPreLlmOnInput } from './run-pre-llm.js';

export type ScanTask = { kind: 'text'; content: string; config: GuardrailsConfigLike } | { kind: 'input'; input: unknown; config: GuardrailsConfigLike };

export default function runScanTask(task: ScanTask) {
  return task.kind === 'text' ? runPreLlm(task.content, task.config) : runPreLlmOnInput(task.input, task.config);
}
