import type { GuardrailCheckInput, GuardrailCheckResponse, GuardrailResponseValue } from './guardrails.schemas.js';
import { runPostLlm } from './run-post-llm.js';
import { scanText } from './scan-pool.js';

/** POST /v1/guardrails/check: one stage over the given content or response. */
export async function checkGuardrails(input: GuardrailCheckInput): Promise<GuardrailCheckResponse> {
  if (input.stage === 'pre_llm') {
    const result = await scanText(input.content ?? '', input.config);
    return result.fallback === undefined
      ? { passed: result.passed, content: result.content, issues: result.issues }
      : { passed: result.passed, content: result.content, issues: result.issues, fallback: result.fallback };
  }
  const result = runPostLlm(input.response ?? '', input.config, input.output_schema);
  return {
    passed: result.passed,
    response: result.response as GuardrailResponseValue,
    issues: result.issues,
    should_retry: result.should_retry,
  };
}
