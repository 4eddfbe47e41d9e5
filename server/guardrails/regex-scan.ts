// Regular-expression scans that stay fast on large inputs.
//
// A detector pattern that is costly to try at every position (a look-behind with Unicode classes,
// a bounded run before the character that makes it specific) is only tried near the places that
// can start a match. `anchoredMatches` gives exactly the matches of the plain global `exec` loop,
// in the same order, when every match contains an anchor (an offset given by the caller) at most
// `lead` characters after its start: no match can start anywhere else, so skipping the rest of the
// text changes nothing. Near each anchor one sticky search runs with a lazy `[\s\S]{0,lead}?`
// prefix, which tries the start positions in the same order as `exec` does.

/** Every match of a global pattern, as `exec` finds them (an empty match advances by one). */
export function* matches(re: RegExp, text: string): Generator<RegExpExecArray> {
  re.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    if (m[0].length === 0) re.lastIndex++;
    yield m;
  }
}

/** The pattern becomes group 1 of the windowed one, so its back-references (`\\2`) move up by one. */
function shiftBackReferences(source: string): string {
  let out = '';
  for (let i = 0; i < source.length; i++) {
    const ch = source[i]!;
    if (ch !== '\\') {
      out += ch;
      continue;
    }
    const digits = /^[1-9]\d*/.exec(source.slice(i + 1, i + 4));
    if (digits) {
      out += `\\${Number(digits[0]) + 1}`;
      i += digits[0].length;
    } else {
      out += source.slice(i, i + 2);
      i++;
    }
  }
  return out;
}

const windowed = new WeakMap<RegExp, Map<number, RegExp>>();

function windowedPattern(re: RegExp, lead: number): RegExp {
  let byLead = windowed.get(re);
  if (!byLead) windowed.set(re, (byLead = new Map()));
  let out = byLead.get(lead);
  if (!out) {
    if (/\(\?<(?![=!])/.test(re.source)) throw new Error('anchoredMatches: patterns with named groups are not supported');
    out = new RegExp(`[\\s\\S]{0,${lead}}?(${shiftBackReferences(re.source)})`, `${re.flags.replace(/[gy]/g, '')}y`);
    byLead.set(lead, out);
  }
  return out;
}

/** Anchors are worth it while there is at most one per this many characters; beyond, the plain scan is cheaper. */
const ANCHOR_SPACING = 24;

/**
 * The matches of global pattern `re` in `text`, given `anchors` (ascending offsets) such that
 * every match contains an anchor at most `lead` characters after its start. Same results as
 * `matches(re, text)`; the cost follows the number of anchors, not the length of the text. Falls
 * back to the plain scan when anchors are so dense that it is cheaper (`anchors` null: too many
 * to list, see `offsetsOf`).
 */
export function* anchoredMatches(re: RegExp, text: string, anchors: readonly number[] | null, lead: number): Generator<RegExpExecArray> {
  if (anchors?.length === 0) return;
  if (anchors === null || anchors.length * ANCHOR_SPACING > text.length) {
    yield* matches(re, text);
    return;
  }
  const near = windowedPattern(re, lead);
  let cursor = 0;
  let a = 0;
  while (a < anchors.length) {
    while (a < anchors.length && anchors[a]! < cursor) a++;
    if (a === anchors.length) return;
    const from = Math.max(cursor, anchors[a]! - lead);
    near.lastIndex = from;
    const m = near.exec(text);
    if (m === null) {
      // No match starts in [from, from + lead]; none can start before `from` either.
      cursor = from + lead + 1;
      continue;
    }
    const found = m.slice(1) as RegExpExecArray;
    found.index = m.index + m[0].length - m[1]!.length;
    found.input = text;
    cursor = found.index + found[0]!.length;
    if (found[0]!.length === 0) cursor++;
    yield found;
  }
}

/**
 * Ascending offsets where `needle` occurs (occurrences may overlap); null when there are too many
 * for `anchoredMatches` to use (listing them all would only cost time and memory).
 */
export function offsetsOf(text: string, needle: string): number[] | null {
  const out: number[] = [];
  const max = text.length / ANCHOR_SPACING;
  for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + 1)) {
    if (out.length >= max) return null;
    out.push(at);
  }
  return out;
}

/** Ascending offsets where global pattern `re` matches, trying every position (matches may overlap); null when too many, as for `offsetsOf`. */
export function offsetsMatching(re: RegExp, text: string): number[] | null {
  const out: number[] = [];
  const max = text.length / ANCHOR_SPACING;
  re.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = re.exec(text)) !== null) {
    if (out.length >= max) return null;
    out.push(m.index);
    re.lastIndex = m.index + 1;
  }
  return out;
}

/** Index of the last value <= `max` in ascending `values` (-1 when none): a binary search. */
export function lastAtMost(values: ArrayLike<number>, max: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid]! <= max) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}
