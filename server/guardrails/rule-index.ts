// Runs many regular expressions over a large text in about one pass.
//
// Trying 70 injection rules at every offset of a megabyte costs 70 scans. But a rule can only
// match where its first element matches: after `\b(?:ignore|disregard|...)` that is the start of
// a word beginning with one of those literals; after `(?:^|\n|[.!?] )` the text start or one of
// those characters. `compileRuleSet` reads that first element from each pattern's source; one
// walk over the text then lists, for every rule, the offsets where it could start, and the rule
// is tried (sticky) only there. Results are exactly those of the global `exec` loop: every match
// starts at a listed offset, and offsets are tried in order from where the last match ended.
// A pattern whose start cannot be read (a look-around, a class range, an optional first element)
// is scanned in full, and so is one whose candidate offsets are too many to be worth it.

/** Where matches of a pattern can start. */
interface FirstSet {
  /** Offset 0 (a `^` without the m flag). */
  start: boolean;
  /** Characters a match can start with. */
  chars: Set<string>;
  /** Literal prefixes of matches that start at a word start (after `\b`). */
  words: Set<string>;
}

class Unknown extends Error {}

const WORD = /\w/;
const LITERAL_ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r' };

/** Reads the first element of each alternative of a pattern source (the subset of syntax the detectors use). */
class FirstSetReader {
  private i = 0;
  constructor(private readonly src: string) {}

  read(): FirstSet {
    const set = this.alternation(false);
    if (this.i !== this.src.length) throw new Unknown();
    return set;
  }

  private alternation(wordBoundary: boolean): FirstSet {
    const set: FirstSet = { start: false, chars: new Set(), words: new Set() };
    for (;;) {
      const part = this.sequence(wordBoundary);
      set.start ||= part.start;
      part.chars.forEach((c) => set.chars.add(c));
      part.words.forEach((w) => set.words.add(w));
      if (this.src[this.i] !== '|') return set;
      this.i++;
    }
  }

  /** First element of one alternative; leaves the cursor on the `|` or `)` that ends it. */
  private sequence(wordBoundary: boolean): FirstSet {
    const src = this.src;
    let wb = wordBoundary;
    while (src.startsWith('\\b', this.i)) {
      wb = true;
      this.i += 2;
    }
    const set: FirstSet = { start: false, chars: new Set(), words: new Set() };
    const ch = src[this.i];
    if (ch === undefined || ch === '|' || ch === ')') throw new Unknown(); // an empty alternative matches anywhere
    if (ch === '^') {
      this.i++;
      set.start = true;
    } else if (ch === '(') {
      if (src[this.i + 1] === '?' && src[this.i + 2] !== ':') throw new Unknown(); // look-around or named group
      this.i += src[this.i + 1] === '?' ? 3 : 1;
      const inner = this.alternation(wb);
      if (src[this.i] !== ')') throw new Unknown();
      this.i++;
      if (this.quantifierMin() === 0) throw new Unknown();
      Object.assign(set, inner);
    } else if (ch === '[') {
      const chars = this.charClass();
      const quantified = '?*+{'.includes(src[this.i] ?? '');
      if (this.quantifierMin() === 0) throw new Unknown();
      // `[Yy]ou are`: the literal that follows makes the prefixes longer, hence rarer.
      const prefixes = quantified ? chars : this.literalRun(chars);
      prefixes.forEach((p) => (wb && WORD.test(p[0]!) ? set.words.add(p) : set.chars.add(p[0]!)));
    } else {
      const literals = this.literalRun(['']);
      if (literals.some((l) => l === '')) throw new Unknown();
      literals.forEach((l) => (wb && WORD.test(l[0]!) ? set.words.add(l) : set.chars.add(l[0]!)));
    }
    this.skipRest();
    return set;
  }

  /**
   * Extends each of `prefixes` with the literal characters that follow (escaped punctuation
   * included). An optional character (`s?`) doubles the prefixes, with and without it (up to 8).
   */
  private literalRun(prefixes: string[]): string[] {
    const src = this.src;
    let out = prefixes;
    for (;;) {
      const ch = src[this.i];
      let lit: string;
      let width: number;
      if (ch === undefined || '|()[]{}?*+.^$'.includes(ch)) break;
      if (ch === '\\') {
        const next = src[this.i + 1];
        if (next === undefined) throw new Unknown();
        if (LITERAL_ESCAPES[next]) lit = LITERAL_ESCAPES[next];
        else if (/[\\.\[\](){}|\/\-*+?$^'"`#:!<>=@&%,;~ ]/.test(next)) lit = next;
        else break; // \s, \w, \d, \b, ...
        width = 2;
      } else {
        lit = ch;
        width = 1;
      }
      const after = src[this.i + width];
      if (after === '?' && src[this.i + width + 1] !== '?' && out.length <= 4) {
        out = out.flatMap((p) => [p + lit, p]);
        this.i += width + 1;
        continue;
      }
      if (after === '?' || after === '*' || (after === '{' && /^\{0[,}]/.test(src.slice(this.i + width)))) break;
      out = out.map((p) => p + lit);
      this.i += width;
      if (after === '+' || after === '{') break; // repeated: what follows is not literal any more
    }
    return out;
  }

  /** A class of single characters (no ranges, no negation). */
  private charClass(): string[] {
    const src = this.src;
    this.i++;
    if (src[this.i] === '^') throw new Unknown();
    const out: string[] = [];
    while (src[this.i] !== ']') {
      const ch = src[this.i];
      if (ch === undefined) throw new Unknown();
      if (ch === '\\') {
        const next = src[this.i + 1]!;
        if (LITERAL_ESCAPES[next]) out.push(LITERAL_ESCAPES[next]);
        else if (/\w/.test(next)) throw new Unknown();
        else out.push(next);
        this.i += 2;
      } else {
        if (src[this.i + 1] === '-' && src[this.i + 2] !== ']') throw new Unknown();
        out.push(ch);
        this.i++;
      }
    }
    this.i++;
    return out;
  }

  /** The minimum count of a quantifier at the cursor (1 without one); consumes it. */
  private quantifierMin(): number {
    const src = this.src;
    const ch = src[this.i];
    let min = 1;
    if (ch === '?' || ch === '*') {
      min = 0;
      this.i++;
    } else if (ch === '+') {
      this.i++;
    } else if (ch === '{') {
      const m = /^\{(\d+)(?:,\d*)?\}/.exec(src.slice(this.i, this.i + 12));
      if (!m) return 1;
      min = Number(m[1]);
      this.i += m[0].length;
    }
    if (src[this.i] === '?') this.i++; // lazy
    return min;
  }

  /** Moves to the `|` or `)` that ends the current alternative (or the end). */
  private skipRest(): void {
    const src = this.src;
    let depth = 0;
    while (this.i < src.length) {
      const ch = src[this.i]!;
      if (ch === '\\') {
        this.i += 2;
        continue;
      }
      if (ch === '[') {
        this.i++;
        while (this.i < src.length && src[this.i] !== ']') this.i += src[this.i] === '\\' ? 2 : 1;
        this.i++;
        continue;
      }
      if (ch === '(') depth++;
      else if (ch === ')') {
        if (depth === 0) return;
        depth--;
      } else if (ch === '|' && depth === 0) return;
      this.i++;
    }
  }
}

/** Where matches of `re` can start, or null when the pattern's start cannot be read. */
export function readFirstSet(re: RegExp): FirstSet | null {
  if (/[imuv]/.test(re.flags)) return null;
  try {
    return new FirstSetReader(re.source).read();
  } catch (err) {
    if (err instanceof Unknown) return null;
    throw err;
  }
}

interface IndexedPattern {
  re: RegExp;
  sticky: RegExp;
  /** Null: scanned in full. */
  first: FirstSet | null;
}

export interface RuleSet {
  patterns: IndexedPattern[];
  /** Per character code < 128 (ASCII letters in lower case): 1 = patterns start with it, 2 = a word character. */
  flags: Uint8Array;
  /**
   * Patterns whose starts are read alike (`(?:^|\n|[.!?] )` opens several rules) share one list of
   * candidate offsets, a slot: `slotOf[pattern]` (-1: scanned in full), `slots` of them.
   */
  slotOf: number[];
  slots: number;
  /** Slots by first character. */
  byChar: number[][];
  /**
   * The word prefixes as a trie over ASCII characters (letters in lower case), the root node 0.
   * The child of `node` by character `c` is found by hashing the edge `node * 128 + c` into
   * `edges` (pairs [edge, child], open addressing, `edgeMask + 1` pairs; an empty pair holds -1):
   * a few kilobytes, where a 128-wide row per node took a megabyte and a half for the injection
   * rules and was mostly out of the CPU's caches between two scans. The root's children, tried at
   * every word start, are a row of their own (`rootChildren[c]`, 0: none). `ends[node]`: slots
   * whose prefix ends there; `rest[node]`: [prefix, slot] pairs whose prefix continues with a
   * non-ASCII character.
   */
  rootChildren: Int32Array;
  edges: Int32Array;
  edgeMask: number;
  /** Per trie node: 1 = `ends` is not empty, 2 = `rest` is not empty. */
  nodeFlags: Uint8Array;
  ends: number[][];
  rest: [string, number][][];
  /** Slots that can start at offset 0. */
  starts: number[];
  /**
   * Per slot of two or more patterns: their sticky alternation. Where it fails, every pattern of
   * the slot fails (confirmedOffsets keeps only the offsets where it matches): one attempt an
   * offset instead of one per pattern (three injection rules start at every line of a text).
   */
  unions: (RegExp | null)[];
}

const WORD_CODES = Uint8Array.from({ length: 128 }, (_, c) => (WORD.test(String.fromCharCode(c)) ? 1 : 0));

/** Spreads trie edges (node * 128 + character) over the hash table. */
const edgeHash = (edge: number) => Math.imul(edge, 0x9e3779b1) >>> 8;

/** A back-reference or a named group: a pattern that cannot be joined with others into one alternation. */
const NOT_JOINABLE = /\\[1-9]|\\k<|\(\?<(?![=!])/;

/**
 * The sticky alternation of a slot's patterns (null: one pattern, or patterns that cannot be
 * joined): it matches at an offset exactly where one of them does.
 */
function unionOf(patterns: readonly RegExp[]): RegExp | null {
  if (patterns.length < 2) return null;
  const flags = patterns[0]!.flags;
  if (patterns.some((re) => re.flags !== flags || NOT_JOINABLE.test(re.source))) return null;
  return new RegExp(patterns.map((re) => `(?:${re.source})`).join('|'), `${flags.replace('g', '')}y`);
}

/** Prepares patterns (global regular expressions without the i, m, u or v flags) for `candidateOffsets` and `ruleMatches`. */
export function compileRuleSet(patterns: readonly RegExp[]): RuleSet {
  const children: number[] = new Array(128).fill(0);
  const ends: number[][] = [[]];
  const rest: [string, number][][] = [[]];
  const set: RuleSet = { patterns: [], slotOf: [], slots: 0, flags: Uint8Array.from(WORD_CODES, (w) => (w ? 2 : 0)), byChar: Array.from({ length: 128 }, () => []), rootChildren: new Int32Array(128), edges: new Int32Array(0), edgeMask: 0, nodeFlags: new Uint8Array(0), ends, rest, starts: [], unions: [] };
  const addWord = (prefix: string, index: number) => {
    let node = 0;
    for (let k = 0; k < prefix.length; k++) {
      const c = prefix.charCodeAt(k);
      if (c >= 128) {
        rest[node]!.push([prefix, index]);
        return;
      }
      let next = children[node * 128 + c]!;
      if (next === 0) {
        next = ends.length;
        ends.push([]);
        rest.push([]);
        children.push(...new Array(128).fill(0));
        children[node * 128 + c] = next;
      }
      node = next;
    }
    if (!ends[node]!.includes(index)) ends[node]!.push(index);
  };
  const slotByKey = new Map<string, number>();
  patterns.forEach((re) => {
    const first = readFirstSet(re);
    const usable = first && [...first.chars].every((c) => c.charCodeAt(0) < 128) && [...first.words].every((w) => w.charCodeAt(0) < 128);
    set.patterns.push({ re, sticky: new RegExp(re.source, `${re.flags.replace('g', '')}y`), first: usable ? first : null });
    if (!usable) {
      set.slotOf.push(-1);
      return;
    }
    const key = JSON.stringify([first.start, [...first.chars].map((c) => c.toLowerCase()).sort(), [...first.words].map((w) => w.toLowerCase()).sort()]);
    const shared = slotByKey.get(key);
    if (shared !== undefined) {
      set.slotOf.push(shared);
      return;
    }
    const index = set.slots++;
    slotByKey.set(key, index);
    set.slotOf.push(index);
    if (first.start) set.starts.push(index);
    first.chars.forEach((ch) => {
      const c = ch.toLowerCase().charCodeAt(0);
      set.byChar[c]!.push(index);
      set.flags[c]! |= 1;
    });
    first.words.forEach((word) => addWord(word.toLowerCase(), index));
  });
  set.rootChildren = Int32Array.from(children.slice(0, 128));
  const linked: [number, number][] = [];
  children.forEach((child, edge) => {
    if (child !== 0 && edge >= 128) linked.push([edge, child]);
  });
  let size = 16;
  while (size < linked.length * 2) size *= 2;
  set.edgeMask = size - 1;
  set.edges = new Int32Array(size * 2).fill(-1);
  for (const [edge, child] of linked) {
    let h = edgeHash(edge) & set.edgeMask;
    while (set.edges[h * 2] !== -1) h = (h + 1) & set.edgeMask;
    set.edges[h * 2] = edge;
    set.edges[h * 2 + 1] = child;
  }
  set.nodeFlags = Uint8Array.from(ends, (list, node) => (list.length ? 1 : 0) | (rest[node]!.length ? 2 : 0));
  set.unions = Array.from({ length: set.slots }, (_, slot) => unionOf(patterns.filter((_re, i) => set.slotOf[i] === slot)));
  return set;
}

/** The candidate list of every slot with none (shared, never written: a slot's first offset replaces it). */
const NO_OFFSETS: number[] = [];
Object.freeze(NO_OFFSETS);

/** Whether `text` continues at `at` with `prefix` (lower case), ignoring the case of ASCII letters. */
function startsWithFolded(text: string, prefix: string, at: number): boolean {
  if (at + prefix.length > text.length) return false;
  for (let k = 0; k < prefix.length; k++) {
    let c = text.charCodeAt(at + k);
    if (c >= 65 && c <= 90) c += 32;
    if (c !== prefix.charCodeAt(k)) return false;
  }
  return true;
}

/**
 * For each pattern of the set, the ascending offsets of `text` where it could match (null: scan
 * it in full). ASCII letters are compared without case, so the offsets hold for a pattern that
 * runs on this text whatever its case (and for its lower case when that has the same length).
 * Patterns of one slot get the same array: read it, do not change it.
 */
export function candidateOffsets(set: RuleSet, text: string): (readonly number[] | null)[] {
  const { flags, byChar, rootChildren, edges, edgeMask, nodeFlags, ends, rest } = set;
  const n = text.length;
  // Most slots find no candidate in a short text: they share one empty array, and a slot gets its
  // own at its first offset (this runs for every variant of every scanned field).
  const out: (number[] | null)[] = new Array<number[] | null>(set.slots).fill(NO_OFFSETS);
  for (const slot of set.starts) out[slot] = [0];
  // Dense candidates: one plain scan is cheaper than that many sticky attempts. A list that grows
  // past the limit is dropped at once (null), so a text full of one start character costs no more.
  const limit = n / 16;
  // The adds are written out in the loop (no helper): this runs for every character of the text.
  let previousWord = false;
  for (let i = 0; i < n; i++) {
    let c = text.charCodeAt(i);
    if (c >= 128) {
      previousWord = false;
      continue;
    }
    if (c >= 65 && c <= 90) c += 32;
    const f = flags[c]!;
    if (f & 1) {
      const list = byChar[c]!;
      for (let k = 0; k < list.length; k++) {
        const offsets = out[list[k]!]!;
        if (offsets === null || offsets[offsets.length - 1] === i) continue;
        if (offsets.length >= limit) out[list[k]!] = null;
        else if (offsets === NO_OFFSETS) out[list[k]!] = [i];
        else offsets.push(i);
      }
    }
    const word = (f & 2) !== 0;
    if (word && !previousWord) {
      // Walk the trie along the word (and what follows it) while prefixes continue.
      let node = 0;
      for (let j = i; j < n; j++) {
        if (nodeFlags[node]! & 2) {
          const tail = rest[node]!;
          for (let k = 0; k < tail.length; k++) {
            const offsets = out[tail[k]![1]];
            if (offsets === null || offsets === undefined || offsets[offsets.length - 1] === i || !startsWithFolded(text, tail[k]![0], i)) continue;
            if (offsets.length >= limit) out[tail[k]![1]] = null;
            else if (offsets === NO_OFFSETS) out[tail[k]![1]] = [i];
            else offsets.push(i);
          }
        }
        let d = text.charCodeAt(j);
        if (d >= 128) break;
        if (d >= 65 && d <= 90) d += 32;
        if (node === 0) node = rootChildren[d]!;
        else {
          const edge = node * 128 + d;
          let h = edgeHash(edge) & edgeMask;
          let found = edges[h * 2]!;
          while (found !== edge && found !== -1) {
            h = (h + 1) & edgeMask;
            found = edges[h * 2]!;
          }
          node = found === -1 ? 0 : edges[h * 2 + 1]!;
        }
        if (node === 0) break;
        if (nodeFlags[node]! & 1) {
          const done = ends[node]!;
          for (let k = 0; k < done.length; k++) {
            const offsets = out[done[k]!]!;
            if (offsets === null || offsets[offsets.length - 1] === i) continue;
            if (offsets.length >= limit) out[done[k]!] = null;
            else if (offsets === NO_OFFSETS) out[done[k]!] = [i];
            else offsets.push(i);
          }
        }
      }
    }
    previousWord = word;
  }
  return set.slotOf.map((slot) => (slot < 0 ? null : out[slot]!));
}

/**
 * `offsets` (candidateOffsets of `text`) without the offsets where no pattern of a shared slot
 * matches: exact for patterns run on this very text (not for a case-sensitive one run on another
 * casing of it, whose candidates stay those of candidateOffsets).
 */
export function confirmedOffsets(set: RuleSet, text: string, offsets: readonly (readonly number[] | null)[]): (readonly number[] | null)[] {
  const confirmed = new Map<number, readonly number[]>();
  return offsets.map((list, index) => {
    const slot = set.slotOf[index]!;
    const union = slot < 0 ? null : set.unions[slot];
    if (!union || !list || list.length === 0) return list;
    let kept = confirmed.get(slot);
    if (!kept) {
      kept = list.filter((at) => {
        union.lastIndex = at;
        return union.test(text);
      });
      confirmed.set(slot, kept);
    }
    return kept;
  });
}

/** The matches of pattern `index` in `text`, exactly as its global `exec` loop finds them. */
export function* ruleMatches(set: RuleSet, index: number, text: string, offsets: readonly number[] | null): Generator<RegExpExecArray> {
  const { re, sticky } = set.patterns[index]!;
  if (offsets === null) {
    re.lastIndex = 0;
    let m: RegExpExecArray | null;
    while ((m = re.exec(text)) !== null) {
      if (m[0].length === 0) re.lastIndex++;
      yield m;
    }
    return;
  }
  let cursor = 0;
  for (const at of offsets) {
    if (at < cursor) continue;
    sticky.lastIndex = at;
    const m = sticky.exec(text);
    if (m === null) continue;
    cursor = at + (m[0].length || 1);
    yield m;
  }
}
