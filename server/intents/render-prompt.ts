// Fills `{{input.path}}`, `{{context}}` and `{{history}}` in a prompt template. Objects and arrays
// become JSON; a missing value becomes an empty string. Nothing else in the template is touched.
const PLACEHOLDER = /\{\{\s*(input(?:\.[A-Za-z0-9_-]+)+|context|history)\s*\}\}/g;

function lookup(input: Record<string, unknown>, path: string[]): unknown {
  let value: unknown = input;
  for (const key of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

function asText(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

export interface PromptValues {
  input: Record<string, unknown>;
  context?: string;
  history?: string;
}

export function renderPrompt(template: string, values: PromptValues): string {
  return template.replace(PLACEHOLDER, (_, name: string) => {
    if (name === 'context') return values.context ?? '';
    if (name === 'history') return values.history ?? '';
    return asText(lookup(values.input, name.split('.').slice(1)));
  });
}
