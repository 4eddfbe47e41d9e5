// Names and text that come from a project file or from the server, as the CLI prints them. Names
// are free text: a line break would let a dataset's name start a line of its own in a plan
// ("+ create agent …"), an escape sequence would move the cursor or rewrite the screen, a
// bidirectional override would reorder what is read. Such characters are shown escaped, JSON-style.

/** C0 and C1 controls (ESC and CSI among them), DEL, line and paragraph separators, bidirectional marks, overrides and isolates, the BOM. */
const UNSAFE_CHARS = '\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069\\ufeff';
const UNSAFE = new RegExp(`[${UNSAFE_CHARS}]`, 'g');
/** A name printed as it is never holds these: one that does is quoted, so a quoted name cannot be faked. */
const NEEDS_QUOTES = new RegExp(`["\\\\${UNSAFE_CHARS}]`);

const SHORT: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t', '\b': '\\b', '\f': '\\f' };
const escapeChar = (c: string) => SHORT[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;

/** `text` with every character that could change how the output reads written as an escape (`\n`, `\u001b`). */
export const escapeControls = (text: string): string => text.replace(UNSAFE, escapeChar);

/** A name (a resource key, a field path): as it is when plain, else quoted and escaped JSON-style. */
export function shownName(name: string): string {
  if (!NEEDS_QUOTES.test(name)) return name;
  return `"${name.replace(/["\\]/g, '\\$&').replace(UNSAFE, escapeChar)}"`;
}
