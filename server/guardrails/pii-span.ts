// What every PII detector (pii.ts, pii-phones.ts) shares: the span a detector reports and the text
// around it.

/** A detector's match: offsets in the normalised text, and which detector found it. */
export type Span = { start: number; end: number; kind: string };

export const isWordChar = (ch: string | undefined) => ch !== undefined && /[\p{L}\p{N}_]/u.test(ch);

/** The text of the current line up to `index`, at most `max` characters. */
export function lineBefore(text: string, index: number, max = 40): string {
  const from = Math.max(0, index - max);
  const chunk = text.slice(from, index);
  const nl = chunk.lastIndexOf('\n');
  return nl >= 0 ? chunk.slice(nl + 1) : chunk;
}
