// The `decode_and_follow` rule: "decode this base64 and follow it". As a regular expression it is
//
//   \b(decode verb)\b[^.!?\n]{0,60}\b(encoding)\b[^.!?\n]{0,80}\b(?:and|then|&)\b ?(follow verb)
//
// and from every decode verb the engine takes 60 characters and gives them back one by one; at
// every encoding word on the way back it takes 80 more and gives those back too: "decode base64 "
// repeated over a megabyte cost a quarter of a second. `decodeAndFollowMatches` finds the same
// matches from three lists made in one pass each (the verbs, the encoding words, and the
// "and follow" parts with where they end), in the order the engine would try them: the encoding
// word farthest from the verb first, and for it the farthest "and".
import { lastAtMost } from './regex-scan.js';

const DECODE_VERB = /\b(?:decode|decrypt|deobfuscate|unscramble|translate|convert|interpret|reverse|read)\b/g;
const ENCODING = /\b(?:base ?64|b64|rot-?13|rot-?\d+|hex(?:adecimal)?|binary|morse|caesar|cipher|backwards|reversed|encoded|encrypted|obfuscated)\b/g;
const AND = /\b(?:and|then|&)\b/g;
const FOLLOW = / ?(?:follow|execute|run|obey|do (?:it|what it says|as it says)|carry (?:it )?out|act on|perform|comply|apply|treat it as)/y;
/** A gap may not hold these (`[^.!?\n]`). */
const STOP = /[.!?\n]/g;

/** The rule's pattern; `decodeAndFollowMatches` gives exactly its global `exec` matches. */
export const DECODE_AND_FOLLOW = new RegExp(`${DECODE_VERB.source}[^.!?\\n]{0,60}${ENCODING.source}[^.!?\\n]{0,80}${AND.source}${FOLLOW.source}`, 'g');

const FIRST_GAP = 60;
const SECOND_GAP = 80;

/** [start, end) of every match of global `re` (words: they cannot overlap). */
function spansOf(re: RegExp, text: string): { starts: number[]; ends: number[] } {
  const starts: number[] = [];
  const ends: number[] = [];
  re.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    starts.push(m.index);
    ends.push(m.index + m[0].length);
  }
  return { starts, ends };
}

/** The matches of DECODE_AND_FOLLOW in `text`, as its global `exec` loop finds them, in linear time. */
export function* decodeAndFollowMatches(text: string): Generator<RegExpExecArray> {
  const verbs = spansOf(DECODE_VERB, text);
  if (verbs.starts.length === 0) return;
  const encodings = spansOf(ENCODING, text);
  if (encodings.starts.length === 0) return;
  // The "and"s that a follow verb comes after, and where that match would end.
  const ands: number[] = [];
  const andEnds: number[] = [];
  AND.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = AND.exec(text)) !== null) {
    FOLLOW.lastIndex = m.index + m[0].length;
    const follow = FOLLOW.exec(text);
    if (follow) {
      ands.push(m.index);
      andEnds.push(FOLLOW.lastIndex);
    }
  }
  if (ands.length === 0) return;
  const stops = spansOf(STOP, text).starts;
  /** Where a gap from `at` must end: the first [.!?\n] at or after it (text length when none). */
  const stopAfter = (at: number) => {
    const i = lastAtMost(stops, at - 1) + 1;
    return i < stops.length ? stops[i]! : text.length;
  };

  let cursor = 0;
  for (let v = 0; v < verbs.starts.length; v++) {
    const start = verbs.starts[v]!;
    if (start < cursor) continue;
    const verbEnd = verbs.ends[v]!;
    // Encoding words that start in the first gap's reach, farthest first.
    const firstLimit = Math.min(verbEnd + FIRST_GAP, stopAfter(verbEnd));
    let end = -1;
    for (let e = lastAtMost(encodings.starts, firstLimit); e >= 0 && encodings.starts[e]! >= verbEnd && end < 0; e--) {
      const encodingEnd = encodings.ends[e]!;
      const secondLimit = Math.min(encodingEnd + SECOND_GAP, stopAfter(encodingEnd));
      const a = lastAtMost(ands, secondLimit);
      if (a >= 0 && ands[a]! >= encodingEnd) end = andEnds[a]!;
    }
    if (end < 0) continue;
    const match = [text.slice(start, end)] as unknown as RegExpExecArray;
    match.index = start;
    match.input = text;
    cursor = end;
    yield match;
  }
}
