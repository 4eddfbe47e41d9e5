// Fills `{{input.path}}`, `{{context}}` and `{{history}}` in a prompt template, with the one
// template engine (common/templates.ts): objects and arrays become JSON, a missing value an empty
// string, paths walk own properties only. Any other `{{...}}` in the template is left as written.
import { fillTemplate } from '../common/templates.js';
import { AppError } from '../errors.js';
import { LimitExceededError } from '../tenants/plan-limits.js';

const PROMPT_PLACEHOLDER = /^(input(\.[A-Za-z0-9_-]+)+|context|history)$/;
const isPromptPlaceholder = (path: string) => PROMPT_PLACEHOLDER.test(path);

/**
 * The longest prompt a run renders, in characters: far past any model's context, and checked
 * before it is built, so a template that repeats a large input field thousands of times cannot
 * make the server build gigabytes.
 */
export const MAX_PROMPT_CHARS = 2_000_000;

export interface PromptValues {
  input: Record<string, unknown>;
  context?: string;
  history?: string;
}

/** The prompt; 413 PAYLOAD_TOO_LARGE when it would be longer than MAX_PROMPT_CHARS. */
export function renderPrompt(template: string, values: PromptValues): string {
  const scope = { input: values.input, context: values.context ?? '', history: values.history ?? '' };
  try {
    return fillTemplate(template, scope, { isPlaceholder: isPromptPlaceholder, expression_result_size: MAX_PROMPT_CHARS });
  } catch (err) {
    if (!(err instanceof LimitExceededError)) throw err;
    throw new AppError('PAYLOAD_TOO_LARGE', `The prompt this input fills in would be longer than ${MAX_PROMPT_CHARS.toLocaleString('en-US')} characters`, {
      max_prompt_chars: MAX_PROMPT_CHARS,
    });
  }
}
