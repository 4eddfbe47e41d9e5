// Text normalisation for the detectors. Obfuscation tricks (full-width digits, zero-width
// characters inside a word, typographic dashes, non-breaking spaces) must not hide PII, injection
// phrases or blocked terms. Redaction has to happen on the caller's original text, so every
// normalised character keeps the span of the original characters it came from.

/** Invisible format characters removed before matching (zero-width space/joiners, word joiner, BOM, soft hyphen, ...). */
const INVISIBLE = /[\u00AD\u034F\u061C\u115F\u1160\u17B4\u17B5\u180B-\u180F\u200B-\u200F\u202A-\u202E\u2060-\u2064\u2066-\u206F\uFE00-\uFE0F\uFEFF]/u;
/** Every Unicode dash or minus sign becomes "-". */
const DASHES = /[\u2010-\u2015\u2212\uFE58\uFE63\uFF0D]/u;

export interface NormalizedText {
  /** NFKC text without invisible characters; dashes unified. Same case as the input. */
  text: string;
  /** For each UTF-16 unit of `text`: the start offset in the original string. */
  starts: Int32Array;
  /** For each UTF-16 unit of `text`: the end offset (exclusive) in the original string. */
  ends: Int32Array;
}

const ASCII_SAFE = /^[\x09\x0A\x0D\x20-\x7E]*$/;

export function normalizeWithMap(original: string): NormalizedText {
  if (ASCII_SAFE.test(original)) {
    // Fast path: nothing changes, the map is the identity.
    const starts = new Int32Array(original.length);
    const ends = new Int32Array(original.length);
    for (let i = 0; i < original.length; i++) {
      starts[i] = i;
      ends[i] = i + 1;
    }
    return { text: original, starts, ends };
  }
  const parts: string[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  let i = 0;
  while (i < original.length) {
    const cp = original.codePointAt(i)!;
    const width = cp > 0xffff ? 2 : 1;
    const char = original.slice(i, i + width);
    let out: string;
    if (cp < 0x80) out = char;
    else if (INVISIBLE.test(char)) out = '';
    else if (DASHES.test(char)) out = '-';
    else out = char.normalize('NFKC');
    for (let k = 0; k < out.length; k++) {
      starts.push(i);
      ends.push(i + width);
    }
    parts.push(out);
    i += width;
  }
  return { text: parts.join(''), starts: Int32Array.from(starts), ends: Int32Array.from(ends) };
}

/** Maps a [start, end) span of the normalised text back to the original string. */
export function toOriginalSpan(map: NormalizedText, start: number, end: number): [number, number] {
  if (end <= start) return [map.starts[start] ?? 0, map.starts[start] ?? 0];
  return [map.starts[start]!, map.ends[end - 1]!];
}

/** Matching form for phrases and terms: NFKC, no invisible characters, unified dashes, lower case, collapsed spaces. */
export function normalizeForMatching(text: string): string {
  return normalizeWithMap(text).text.toLowerCase().replace(/\s+/g, ' ');
}
