// The one `{{path}}` template engine: workflow step configs (renderTemplate) and intent prompts
// (fillTemplate, through intents/render-prompt.ts). A string that is exactly one template becomes
// the value at that path as it is (an object stays an object); a template inside longer text is
// replaced by the value as text (objects and arrays as JSON). A path that leads nowhere gives null
// (alone) or '' (inside text). Paths walk own properties only, so no template reaches a prototype.
//
// What rendering builds is capped by the plan's expression_result_size, checked before it is
// built: the characters of every string filled from placeholders (an object placed in text counts
// as its JSON) and the entries of every list and map copied, all together. A whole-string template
// builds nothing (the value is the one the run already holds), so it counts for nothing here; the
// run's own limits weigh what the step then stores or sends. Rendering is linear in what it builds,
// so the cap bounds its time too.
import { jsonSize } from '../runs/json-size.js';
import { DEFAULT_PLAN_LIMITS, LimitExceededError, type PlanLimits } from '../tenants/plan-limits.js';

/** A tenant's plan limits for rendering (a whole `PlanLimits` may be passed). */
export type RenderOptions = Partial<Pick<PlanLimits, 'expression_result_size'>>;

const TEMPLATE = /\{\{\s*([A-Za-z_][\w-]*(?:\.[\w-]+|\[\d+\])*)\s*\}\}/g;
const WHOLE = /^\{\{\s*([A-Za-z_][\w-]*(?:\.[\w-]+|\[\d+\])*)\s*\}\}$/;

export type TemplateScope = Record<string, unknown>;

/** The value at a dotted path (`steps.score.output.value`, `items[0]`), or undefined. */
export function lookupPath(scope: TemplateScope, path: string): unknown {
  const parts = (path.includes('[') ? path.replace(/\[(\d+)\]/g, '.$1') : path).split('.');
  let value: unknown = scope;
  for (const part of parts) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** What one rendering may still build, in characters and entries. */
interface Budget {
  max: number;
  left: number;
}

/** Fails unless `size` more fits in what is left. */
function ensure(budget: Budget, size: number): void {
  if (size <= budget.left) return;
  throw new LimitExceededError('expression_result_size', budget.max,
    `the rendered template would be larger than the plan's expression_result_size limit of ${budget.max.toLocaleString('en-US')} (characters of its strings and entries of its lists and maps, together)`);
}

function spend(budget: Budget, size: number): void {
  ensure(budget, size);
  budget.left -= size;
}

/** A placeholder's value as text; `used`: what the string being filled holds so far. */
function asText(value: unknown, budget: Budget, used: number): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  // Measured without being built: an object far over the cap is never serialised.
  if (typeof value === 'object') ensure(budget, used + jsonSize(value, budget.left - used));
  return JSON.stringify(value) ?? '';
}

/** Which paths are placeholders (the rest stay as written); every path when absent. */
type PlaceholderFilter = (path: string) => boolean;

/** The string with its placeholders filled: its length is known, and checked, before it is joined. */
function fillText(text: string, scope: TemplateScope, budget: Budget, isPlaceholder?: PlaceholderFilter): string {
  const parts: string[] = [];
  let size = 0;
  const add = (part: string) => {
    size += part.length;
    ensure(budget, size);
    parts.push(part);
  };
  let at = 0;
  // exec on the shared pattern (matchAll would build a copy of it for every string); nothing runs
  // between two calls that could use it.
  TEMPLATE.lastIndex = 0;
  for (let match = TEMPLATE.exec(text); match !== null; match = TEMPLATE.exec(text)) {
    add(text.slice(at, match.index));
    add(!isPlaceholder || isPlaceholder(match[1]!) ? asText(lookupPath(scope, match[1]!), budget, size) : match[0]);
    at = match.index + match[0].length;
  }
  add(text.slice(at));
  budget.left -= size;
  return parts.join('');
}

function render(value: unknown, scope: TemplateScope, budget: Budget): unknown {
  if (typeof value === 'string') {
    const whole = WHOLE.exec(value);
    if (whole) return lookupPath(scope, whole[1]) ?? null;
    return value.includes('{{') ? fillText(value, scope, budget) : value;
  }
  if (Array.isArray(value)) {
    spend(budget, value.length);
    return value.map((v) => render(v, scope, budget));
  }
  if (value && typeof value === 'object') {
    const entries = Object.entries(value);
    spend(budget, entries.length);
    return Object.fromEntries(entries.map(([k, v]) => [k, render(v, scope, budget)]));
  }
  return value;
}

/**
 * Fills every template in a value (strings, arrays and objects, recursively). Throws
 * `LimitExceededError` (expression_result_size, code EXPRESSION_LIMIT) before building more than
 * `options.expression_result_size` characters and entries in all (default: the trial plan's).
 */
export function renderTemplate(value: unknown, scope: TemplateScope, options: RenderOptions = {}): unknown {
  const max = options.expression_result_size ?? DEFAULT_PLAN_LIMITS.trial.expression_result_size;
  return render(value, scope, { max, left: max });
}

/**
 * Fills the placeholders of one text: those `isPlaceholder` accepts (all when absent); any other
 * `{{...}}` stays as written. Capped like renderTemplate (default: no cap).
 */
export function fillTemplate(text: string, scope: TemplateScope, options: RenderOptions & { isPlaceholder?: PlaceholderFilter } = {}): string {
  const max = options.expression_result_size ?? Number.POSITIVE_INFINITY;
  return fillText(text, scope, { max, left: max }, options.isPlaceholder);
}
