// Blocked terms: case-insensitive, whole words, Unicode-normalised on both sides (NFKC, no
// zero-width characters, unified dashes), so "Ｃｏｍｐｅｔｉｔｏｒ" or "compe\u200Btitor" still match.
//
// A tenant may configure hundreds of terms, and one regular expression per term over a megabyte
// costs a scan each. A term that starts with a word can only match where the text has that very
// word (the match starts after a non-word character and the term's first word is followed by a
// non-word character or ends it), so with many terms the words of the text are listed once and
// only the terms whose first word is among them are tried.
import { normalizeForMatching } from './normalize.js';

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

interface TermPattern {
  re: RegExp;
  /** The word the term starts with (null when it starts with another character). */
  firstWord: string | null;
}

const cache = new Map<string, TermPattern | null>();

const FIRST_WORD = /^[\p{L}\p{N}_]+/u;
/** From this many terms on, listing the text's words once costs less than a scan per term. */
const WORD_INDEX_MIN_TERMS = 8;

function termPattern(term: string): TermPattern | null {
  const cached = cache.get(term);
  if (cached !== undefined) return cached;
  const normalized = normalizeForMatching(term).trim();
  let pattern: TermPattern | null = null;
  if (normalized) {
    const body = normalized.split(' ').map(escape).join('\\s+');
    const re = new RegExp(`(?<![\\p{L}\\p{N}_])${body}(?![\\p{L}\\p{N}_])`, 'u');
    pattern = { re, firstWord: FIRST_WORD.exec(normalized)?.[0] ?? null };
  }
  if (cache.size > 5000) cache.clear();
  cache.set(term, pattern);
  return pattern;
}

const WORD_CHAR = /^[\p{L}\p{N}_]$/u;
// Whether a BMP code point is a word character, found once per code point: 0 not yet known, 1 yes, 2 no.
const wordChars = new Uint8Array(0x10000);

function isWordCodePoint(cp: number): boolean {
  if (cp > 0xffff) return WORD_CHAR.test(String.fromCodePoint(cp));
  let known = wordChars[cp]!;
  if (known === 0) wordChars[cp] = known = WORD_CHAR.test(String.fromCharCode(cp)) ? 1 : 2;
  return known === 1;
}

/** The words of `haystack`: what `/[\p{L}\p{N}_]+/gu` matches, read by character code (a match object per word costs twice as much). */
function wordsOf(haystack: string): Set<string> {
  const words = new Set<string>();
  let start = -1;
  for (let i = 0; i < haystack.length; i++) {
    const c = haystack.charCodeAt(i);
    const cp = c < 0xd800 || c > 0xdbff ? c : haystack.codePointAt(i)!;
    if (isWordCodePoint(cp)) {
      if (start < 0) start = i;
    } else if (start >= 0) {
      words.add(haystack.slice(start, i));
      start = -1;
    }
    if (cp > 0xffff) i++;
  }
  if (start >= 0) words.add(haystack.slice(start));
  return words;
}

/** The configured terms found in `text` (each once, as configured). */
export function findBlockedTerms(text: string, terms: readonly string[] | undefined): string[] {
  if (!terms?.length || !text) return [];
  return findBlockedTermsInMatchingForm(normalizeForMatching(text), terms);
}

/** findBlockedTerms on text already in matching form (`normalizeForMatching`). */
export function findBlockedTermsInMatchingForm(haystack: string, terms: readonly string[] | undefined): string[] {
  if (!terms?.length || !haystack) return [];
  const words = terms.length >= WORD_INDEX_MIN_TERMS ? wordsOf(haystack) : null;
  const found: string[] = [];
  for (const term of terms) {
    const pattern = termPattern(term);
    if (!pattern || found.includes(term)) continue;
    if (words && pattern.firstWord !== null && !words.has(pattern.firstWord)) continue;
    if (pattern.re.test(haystack)) found.push(term);
  }
  return found;
}
