// Fills `{{input.path}}`, `{{context}}` and `{{history}}` in a prompt template, with the one
// template engine (common/templates.ts): objects and arrays become JSON, a missing value an empty
// string, paths walk own properties only. Any other `{{...}}` in the template is left as written.
import { fillTemplate } from '../common/templates.js';

const PROMPT_PLACEHOLDER = /^(input(\.[A-Za-z0-9_-]+)+|context|history)$/;
const isPromptPlaceholder = (path: string) => PROMPT_PLACEHOLDER.test(path);

export interface PromptValues {
  input: Record<string, unknown>;
  context?: string;
  history?: string;
}

export function renderPrompt(template: string, values: PromptValues): string {
  const scope = { input: values.input, context: values.context ?? '', history: values.history ?? '' };
  return fillTemplate(template, scope, { isPlaceholder: isPromptPlaceholder });
}
