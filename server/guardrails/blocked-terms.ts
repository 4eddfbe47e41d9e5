// Blocked terms: case-insensitive, whole words, Unicode-normalised on both sides (NFKC, no
// zero-width characters, unified dashes), so "Ｃｏｍｐｅｔｉｔｏｒ" or "compe\u200Btitor" still match.
import { normalizeForMatching } from './normalize.js';

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

const cache = new Map<string, RegExp | null>();

function termPattern(term: string): RegExp | null {
  const cached = cache.get(term);
  if (cached !== undefined) return cached;
  const normalized = normalizeForMatching(term).trim();
  let re: RegExp | null = null;
  if (normalized) {
    const body = normalized.split(' ').map(escape).join('\\s+');
    re = new RegExp(`(?<![\\p{L}\\p{N}_])${body}(?![\\p{L}\\p{N}_])`, 'u');
  }
  if (cache.size > 5000) cache.clear();
  cache.set(term, re);
  return re;
}

/** The configured terms found in `text` (each once, as configured). */
export function findBlockedTerms(text: string, terms: readonly string[] | undefined): string[] {
  if (!terms?.length || !text) return [];
  const haystack = normalizeForMatching(text);
  const found: string[] = [];
  for (const term of terms) {
    const re = termPattern(term);
    if (re && re.test(haystack) && !found.includes(term)) found.push(term);
  }
  return found;
}
