// Text normalisation for the detectors. Obfuscation tricks (full-width digits, zero-width
// characters inside a word, typographic dashes, non-breaking spaces) must not hide PII, injection
// phrases or blocked terms. Redaction has to happen on the caller's original text, so every
// normalised character keeps the span of the original characters it came from.
//
// Each character is mapped on its own (NFKC of one code point, not of the whole string), and the
// mapping of a code point is computed once and cached: a megabyte of text is normalised in a few
// milliseconds instead of a second of per-character regular expressions and `normalize()` calls.

/** Invisible format characters removed before matching (zero-width space/joiners, word joiner, BOM, soft hyphen, ...). */
const INVISIBLE = /[\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u206F\uFE00-\uFE0F\uFEFF]/u;
/** Every Unicode dash or minus sign becomes "-". */
const DASHES = /[\u2010-\u2015\u2212\uFE58\uFE63\uFF0D]/u;

export interface NormalizedText {
  /** NFKC text without invisible characters; dashes unified. Same case as the input. */
  text: string;
  /** True when `text` is the original string (offsets map to themselves; `starts`/`ends` are empty). */
  identity: boolean;
  /** For each UTF-16 unit of `text`: the start offset in the original string. */
  starts: Int32Array;
  /** For each UTF-16 unit of `text`: the end offset (exclusive) in the original string. */
  ends: Int32Array;
}

const ASCII_SAFE = /^[\x09\x0A\x0D\x20-\x7E]*$/;
const EMPTY = new Int32Array(0);

// Replacement of a non-ASCII code point: null when it stays as it is. For BMP code points,
// `bmpState` says 0 not yet known, 1 unchanged, 2 replaced by `bmpReplacement`; other code points
// are cached in a bounded map. (A 65 536-slot array of strings would be a slow dictionary.)
const bmpState = new Uint8Array(0x10000);
const bmpReplacement = new Map<number, string>();
const astralCache = new Map<number, string | null>();

function replacementOf(cp: number, char: string): string | null {
  let out: string;
  if (INVISIBLE.test(char)) out = '';
  else if (DASHES.test(char)) out = '-';
  else out = char.normalize('NFKC');
  return out === char ? null : out;
}

/** Replacement of code point `cp`, `width` units at `at` in `text` (sliced only the first time it is seen). */
function cachedReplacement(text: string, at: number, cp: number, width: number): string | null {
  if (cp <= 0xffff) {
    const state = bmpState[cp];
    if (state === 1) return null;
    if (state === 2) return bmpReplacement.get(cp)!;
    const out = replacementOf(cp, text.slice(at, at + width));
    bmpState[cp] = out === null ? 1 : 2;
    if (out !== null) bmpReplacement.set(cp, out);
    return out;
  }
  let hit = astralCache.get(cp);
  if (hit === undefined) {
    hit = replacementOf(cp, text.slice(at, at + width));
    if (astralCache.size < 10_000) astralCache.set(cp, hit);
  }
  return hit;
}

export function normalizeWithMap(original: string): NormalizedText {
  if (ASCII_SAFE.test(original)) return { text: original, identity: true, starts: EMPTY, ends: EMPTY };
  const n = original.length;
  let starts = new Int32Array(n + 64);
  let ends = new Int32Array(n + 64);
  let length = 0;
  const parts: string[] = [];
  let unchangedFrom = 0; // start of the run of original text copied as it is
  let changed = false;
  // Room for `units` more entries; NFKC may expand a character (ﬁ -> fi), so the maps can outgrow the input.
  const reserve = (units: number) => {
    if (length + units <= starts.length) return;
    const grown = Math.max(starts.length * 2, length + units + 64);
    const s = new Int32Array(grown);
    const e = new Int32Array(grown);
    s.set(starts.subarray(0, length));
    e.set(ends.subarray(0, length));
    starts = s;
    ends = e;
  };
  let i = 0;
  while (i < n) {
    const code = original.charCodeAt(i);
    if (code < 0x80) {
      if (length === starts.length) reserve(1);
      starts[length] = i;
      ends[length++] = i + 1;
      i++;
      continue;
    }
    const cp = original.codePointAt(i)!;
    const width = cp > 0xffff ? 2 : 1;
    const out = cachedReplacement(original, i, cp, width);
    const units = out === null ? width : out.length;
    reserve(units);
    for (let k = 0; k < units; k++) {
      starts[length] = i;
      ends[length++] = i + width;
    }
    if (out !== null) {
      parts.push(original.slice(unchangedFrom, i), out);
      unchangedFrom = i + width;
      changed = true;
    }
    i += width;
  }
  if (!changed) return { text: original, identity: false, starts: starts.subarray(0, length), ends: ends.subarray(0, length) };
  parts.push(original.slice(unchangedFrom));
  return { text: parts.join(''), identity: false, starts: starts.subarray(0, length), ends: ends.subarray(0, length) };
}

/** Maps a [start, end) span of the normalised text back to the original string. */
export function toOriginalSpan(map: NormalizedText, start: number, end: number): [number, number] {
  if (map.identity) {
    if (end > start) return [start, end];
    const at = start < map.text.length ? start : 0;
    return [at, at];
  }
  if (end <= start) return [map.starts[start] ?? 0, map.starts[start] ?? 0];
  return [map.starts[start]!, map.ends[end - 1]!];
}

/** Matching form of normalised text: lower case, collapsed spaces. */
export function matchingForm(normalized: string): string {
  return normalized.toLowerCase().replace(/\s+/g, ' ');
}

/** Matching form for phrases and terms: NFKC, no invisible characters, unified dashes, lower case, collapsed spaces. */
export function normalizeForMatching(text: string): string {
  return matchingForm(normalizeWithMap(text).text);
}
