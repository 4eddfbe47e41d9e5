// PostgreSQL cannot store U+0000 in text or jsonb: a NUL that reached a query would fail there
// as a 500. It is refused once, here at the edge, wherever a request can carry a string: path
// parameters, query values and JSON bodies (values and keys; json-body.ts walks those).
import { AppError } from '../errors.js';

const NUL = '\u0000';

/** The dotted path of the first string or key holding U+0000 inside `value`, or null. */
export function findNul(value: unknown, path: string): string | null {
  if (typeof value === 'string') return value.includes(NUL) ? path : null;
  if (typeof value !== 'object' || value === null) return null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findNul(value[i], `${path}.${i}`);
      if (found) return found;
    }
    return null;
  }
  for (const [key, item] of Object.entries(value)) {
    if (key.includes(NUL)) return `${path}.${JSON.stringify(key)}`;
    const found = findNul(item, path ? `${path}.${key}` : key);
    if (found) return found;
  }
  return null;
}

export function nulError(path: string): AppError {
  return new AppError('INVALID_INPUT', 'The request contains a NUL character (U+0000), which no field accepts', {
    issues: [{ path, message: 'must not contain the NUL character U+0000', code: 'nul_character' }],
  });
}

/** Throws 400 INVALID_INPUT when a path parameter or query value holds U+0000. */
export function rejectNulInUrl(params: Record<string, unknown>, query: Record<string, unknown>): void {
  for (const [name, value] of Object.entries(params)) {
    if (typeof value === 'string' && value.includes(NUL)) throw nulError(name);
  }
  for (const [name, value] of Object.entries(query)) {
    const found = name.includes(NUL) ? JSON.stringify(name) : findNul(value, name);
    if (found) throw nulError(found);
  }
}
