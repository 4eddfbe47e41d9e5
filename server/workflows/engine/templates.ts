// `{{path}}` templates in step configs. A string that is exactly one template becomes the value at
// that path as it is (an object stays an object); a template inside longer text is replaced by the
// value as text (objects and arrays as JSON). A path that leads nowhere gives null (alone) or ''
// (inside text). Paths walk own properties only, so no template reaches a prototype.
const TEMPLATE = /\{\{\s*([A-Za-z_][\w-]*(?:\.[\w-]+|\[\d+\])*)\s*\}\}/g;
const WHOLE = /^\{\{\s*([A-Za-z_][\w-]*(?:\.[\w-]+|\[\d+\])*)\s*\}\}$/;

export type TemplateScope = Record<string, unknown>;

/** The value at a dotted path (`steps.score.output.value`, `items[0]`), or undefined. */
export function lookupPath(scope: TemplateScope, path: string): unknown {
  const parts = path.replace(/\[(\d+)\]/g, '.$1').split('.');
  let value: unknown = scope;
  for (const part of parts) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

const asText = (value: unknown) => (value === undefined || value === null ? '' : typeof value === 'string' ? value : JSON.stringify(value));

/** Fills every template in a value (strings, arrays and objects, recursively). */
export function renderTemplate(value: unknown, scope: TemplateScope): unknown {
  if (typeof value === 'string') {
    const whole = WHOLE.exec(value);
    if (whole) return lookupPath(scope, whole[1]) ?? null;
    return value.includes('{{') ? value.replace(TEMPLATE, (_, path: string) => asText(lookupPath(scope, path))) : value;
  }
  if (Array.isArray(value)) return value.map((v) => renderTemplate(v, scope));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderTemplate(v, scope)]));
  }
  return value;
}
