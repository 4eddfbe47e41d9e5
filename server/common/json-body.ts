// The checks every parsed JSON request body passes once, at the edge, before any route sees it (the
// app's JSON parser, and the raw-body webhook routes after their signature check):
// - nesting depth: the code behind the routes (schema validation, JSON Schema compilers, diffs,
//   templates, exports) walks values recursively, so a body nested thousands of levels deep would
//   exhaust the stack somewhere as a 500; a value that was accepted is one every later reader and
//   writer (GET /v1/project, its plan) can handle;
// - U+0000, which PostgreSQL cannot store in text or jsonb (see reject-nul.ts).
// One walk does both; its recursion stops at the limit, so the walk itself cannot overflow.
import { AppError } from '../errors.js';
import { nulError } from './reject-nul.js';

/** Deepest nesting of objects and arrays a JSON request body may have (the body itself is level 1). */
export const MAX_JSON_DEPTH = 100;

// JSON can only carry U+0000 as the escape \u0000 (raw control characters are invalid JSON), so
// strings and keys are searched only when the text holds that escape: no cost for ordinary bodies.
const ESCAPED_NUL = /\\u0000/i;
const NUL = '\u0000';

interface Found {
  problem: 'too_deep' | 'nul';
  /** Keys and indexes from the value found up to the body (reversed once found). */
  path: string[];
}

function inspect(value: unknown, depth: number, nul: boolean): Found | null {
  if (typeof value === 'string') return nul && value.includes(NUL) ? { problem: 'nul', path: [] } : null;
  if (typeof value !== 'object' || value === null) return null;
  if (depth > MAX_JSON_DEPTH) return { problem: 'too_deep', path: [] };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = inspect(value[i], depth + 1, nul);
      if (found) return found.path.push(String(i)), found;
    }
    return null;
  }
  for (const key of Object.keys(value)) {
    if (nul && key.includes(NUL)) return { problem: 'nul', path: [JSON.stringify(key)] };
    const found = inspect((value as Record<string, unknown>)[key], depth + 1, nul);
    if (found) return found.path.push(key), found;
  }
  return null;
}

// Keys are the caller's: a path is cut to a readable length (each key, and the whole of it).
const MAX_KEY_CHARS = 60;
const MAX_PATH_CHARS = 1000;

function pathText(reversed: string[]): string {
  const keys = reversed.reverse().map((k) => (k.length > MAX_KEY_CHARS ? `${k.slice(0, MAX_KEY_CHARS - 3)}...` : k));
  const text = keys.join('.');
  return text.length > MAX_PATH_CHARS ? `${text.slice(0, MAX_PATH_CHARS / 2)}...${text.slice(-MAX_PATH_CHARS / 2)}` : text;
}

function tooDeepError(path: string): AppError {
  const message = `objects and arrays nested deeper than ${MAX_JSON_DEPTH} levels`;
  return new AppError('INVALID_INPUT', `The request body nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels (the body itself is level 1)`, {
    max_depth: MAX_JSON_DEPTH,
    issues: [{ path, message, code: 'too_deep' }],
  });
}

/**
 * Throws 400 INVALID_INPUT naming the field when a parsed JSON body nests objects and arrays
 * deeper than MAX_JSON_DEPTH (`too_deep`) or holds U+0000 in a string or key (`nul_character`).
 */
export function checkJsonBody(text: string, parsed: unknown): void {
  const found = inspect(parsed, 1, ESCAPED_NUL.test(text));
  if (!found) return;
  const path = pathText(found.path) || '(body)';
  throw found.problem === 'nul' ? nulError(path) : tooDeepError(path);
}
