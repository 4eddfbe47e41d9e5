// The `fake_turns` rule: a made-up chat transcript ("User: ...\nAssistant: ...") that puts words
// in the assistant's mouth. As a regular expression (dot matching line breaks) it is
//
//   (?:^|\n)\s*(?:human|user)\s*:.{0,400}\n\s*(?:assistant|ai|gpt|chatgpt|claude)\s*:
//
// and after every "user:" line the engine takes the next 400 characters and gives them back one by
// one looking for the assistant's line: a megabyte of short "human: hi" lines cost a quarter of a
// second. `fakeTurnsMatches` finds the same matches in one pass. What makes it possible: the
// `\s*` runs are fixed (the words after them start with a letter, so a run cannot give back a
// character), so a start decides where its "human:" ends (`c`), and the greedy `.{0,400}` settles on
// the last assistant line that starts (at a line break) within 400 characters of `c`. Those
// assistant lines are listed once, with the line breaks that can open each of them.
import { lastAtMost } from './regex-scan.js';

const TAIL_WORD = /(?:assistant|ai|gpt|chatgpt|claude)\s*:/g;

/** The rule's pattern; `fakeTurnsMatches` gives exactly its global `exec` matches. */
export const FAKE_TURNS = /(?:^|\n)\s*(?:human|user)\s*:.{0,400}\n\s*(?:assistant|ai|gpt|chatgpt|claude)\s*:/gs;

const REACH = 400;

/** `\s` of a regular expression, for one UTF-16 unit. */
const WHITESPACE = /^\s$/;
function isSpace(text: string, at: number): boolean {
  const c = text.charCodeAt(at);
  if (c === 32 || (c >= 9 && c <= 13)) return true;
  return c > 127 && WHITESPACE.test(text[at]!);
}

/** The end of the run of whitespace that starts at `at`. */
function skipSpaces(text: string, at: number): number {
  while (at < text.length && isSpace(text, at)) at++;
  return at;
}

/** An assistant line: the line breaks that can open it (ascending), and where its match ends (after the colon). */
interface AssistantLine {
  breaks: number[];
  end: number;
}

/**
 * The assistant lines, ascending: a tail word (`assistant:`, `ai :`, ...) whose run of whitespace
 * before it holds a line break; every line break of that run can open it.
 */
function assistantLines(text: string): AssistantLine[] {
  const lines: AssistantLine[] = [];
  TAIL_WORD.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = TAIL_WORD.exec(text)) !== null) {
    // The runs before two words are apart (a word and its colon lie between): walking back over
    // each costs one pass in all.
    const breaks: number[] = [];
    for (let at = m.index - 1; at >= 0 && isSpace(text, at); at--) if (text.charCodeAt(at) === 10) breaks.push(at);
    if (breaks.length > 0) lines.push({ breaks: breaks.reverse(), end: m.index + m[0].length });
  }
  return lines;
}

/** The matches of FAKE_TURNS in `text`, as its global `exec` loop finds them, in linear time. */
export function* fakeTurnsMatches(text: string): Generator<RegExpExecArray> {
  if (!/human|user/.test(text)) return;
  const lines = assistantLines(text);
  if (lines.length === 0) return;
  const firstBreaks = lines.map((line) => line.breaks[0]!);
  let cursor = 0;
  // `^` opens the text, then every line break; the starts inside one run of whitespace reach the
  // same word and share its fate, so only the first of them is tried.
  let s = 0;
  while (s >= 0) {
    const wordAt = skipSpaces(text, s === 0 && text.charCodeAt(0) !== 10 ? 0 : s + 1);
    let c = -1; // where the "human:" part ends
    if (text.startsWith('human', wordAt)) c = skipSpaces(text, wordAt + 5);
    else if (text.startsWith('user', wordAt)) c = skipSpaces(text, wordAt + 4);
    if (c >= 0 && text.charCodeAt(c) === 58) {
      c++;
      // The greedy `.{0,400}` stops at the last line break in [c, c + 400] that opens an
      // assistant line. It lies in the last line whose first break is in reach, or nowhere: the
      // lines before that one end before its first break.
      const k = lastAtMost(firstBreaks, c + REACH);
      if (k >= 0) {
        const { breaks, end } = lines[k]!;
        const at = breaks[lastAtMost(breaks, c + REACH)]!;
        if (at >= c) {
          const m = [text.slice(s, end)] as unknown as RegExpExecArray;
          m.index = s;
          m.input = text;
          cursor = end;
          yield m;
        }
      }
    }
    s = text.indexOf('\n', Math.max(wordAt, cursor));
  }
}
