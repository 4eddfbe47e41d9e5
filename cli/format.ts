// Small text formats shared by the commands' output.

/** A value placed in a URL path. */
export const segment = encodeURIComponent;

/** An ISO timestamp as `2026-11-23 18:54:44Z` (or — when there is none). */
export const dateTime = (iso: string | null | undefined) => (iso ? iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z') : '—');

/** `1 run`, `2 runs`. */
export const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** One line of at most `max` characters (line breaks become spaces). */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}
