// Phone-number detection for pii.ts: digit runs with their separators, decided by the nearest label
// before them, national formats and the shapes that are something else (dates, ISBNs, versions).
import { isWordChar, lineBefore, type Span } from './pii-span.js';
import { matches } from './regex-scan.js';

const GROUP = String.raw`(?:\d{1,15}|\(\d{1,5}\)[ \t]?\d{1,15})`;
const PHONE_SEP = String.raw`(?:[ \t]?[\-.\/][ \t]?|[ \t])`;
const PHONE_CANDIDATE = new RegExp(String.raw`(?:\+[ \t]?|(?<!\d)00[ \t]?)?${GROUP}(?:${PHONE_SEP}${GROUP})*`, 'g');

// Labels before a number: the nearest one decides whether it is a phone number.
const PHONE_LABEL = String.raw`(?:(?:phone|telephone|telefon|telefone|teléfono|téléphone|tél|tel|mobile|mobil|móvil|movil|mob|cell|cellphone|cell phone|handy|whatsapp|viber|signal|telegram|contact|fax|landline|direct line)(?:[ \-]?(?:number|no\.?|num|nr\.?|#))?|(?:work|home|office|best|main|direct|daytime|evening)[ \-]?(?:number|no\.?|phone|line|tel|#)|phones|call|calls|calling|called|ring|text|txt|sms|dial|dialed|reach|reached|hotline|ph\.?|tel\.?|mob\.?|(?:my|his|her|their|your|our) (?:number|no\.?|#)|number is|landline|extension|ext\.?)`;
// Generic words ("number", "no.", "#") are neutral: "order number" is decided by "order".
const NEUTRAL_LABEL = String.raw`(?:no\.?|nr\.?|#|number|num)`;
const NON_PHONE_LABEL = String.raw`(?:order|orders|invoice|inv|ref|reference|ticket|id|ids|case|account|acct|acc|iban|isbn|issn|doi|sku|serial|tracking|po|req|requisition|job|badge|employee|emp|zip|postal|postcode|version|ver|build|release|batch|lot|item|part|model|customer|member|policy|claim|transaction|txn|confirmation|booking|reservation|ssn|social security|license|licence|passport|routing|swift|bic|pin|otp|code|salary|usd|eur|gbp|chf|inr|\$|€|£|¥|step|steps|pages?|pp\.?|score|room|suite|flight|patent|registration|vat|ein|tax|card|check|cheque|receipt|shipment|parcel|container|award|grant|contract|project|issue|pr|commit|record|file|docket|student|matriculation|dated|date)`;
const LABEL_RE = new RegExp(String.raw`(?:(${PHONE_LABEL})|(${NON_PHONE_LABEL})|${NEUTRAL_LABEL})(?![\p{L}\p{N}])`, 'giu');

function nearestLabel(window: string): 'phone' | 'other' | null {
  // A label applies to the next number only: look after the last digit.
  let lastDigit = window.length - 1;
  while (lastDigit >= 0 && !isDigitCode(window.charCodeAt(lastDigit))) lastDigit--;
  const before = lastDigit >= 0 ? window.slice(lastDigit + 1) : window;
  let result: 'phone' | 'other' | null = null;
  let lastEnd = -1;
  LABEL_RE.lastIndex = 0;
  let m: RegExpExecArray | null;
  while ((m = LABEL_RE.exec(before)) !== null) {
    if (m[0].length === 0) {
      LABEL_RE.lastIndex++;
      continue;
    }
    // Labels must start at a word boundary.
    const prev = before[m.index - 1];
    if (/[\p{L}\p{N}]/u.test(m[0][0]!) && isWordChar(prev)) continue;
    if (!m[1] && !m[2]) continue; // neutral
    if (m.index + m[0].length >= lastEnd) {
      lastEnd = m.index + m[0].length;
      result = m[1] ? 'phone' : 'other';
    }
  }
  return result;
}

const DATE_LIKE = [
  /^\d{4}[\-.\/ ]\d{1,2}[\-.\/ ]\d{1,2}(?:\D|$)/, // 2024-01-15
  /^\d{1,2}[\-.\/ ]\d{1,2}[\-.\/ ]\d{2,4}$/, // 15.01.2024, 01/15/24
  /^(?:19|20)\d{2} ?[\-\/] ?(?:19|20)?\d{2}$/, // 2019-2023, 2019/20
  /^(?:19|20)\d{2}(?:[ \-\/](?:19|20)\d{2})+$/, // lists of years
  /^\d{1,2}[.:]\d{2} ?- ?\d{1,2}[.:]\d{2}$/, // 8.30-17.00
];

/** Whether a phone candidate (digits, separators, parentheses, a "+") with `digits` digits is a valid ISBN-10 or ISBN-13. */
function isbnValid(raw: string, digits: number): boolean {
  // A phone candidate has no "X": an ISBN here is 10 or 13 digits.
  if (digits !== 10 && digits !== 13) return false;
  const d = raw.replace(/[\s\-]/g, '');
  if (/^\d{9}[\dX]$/i.test(d)) {
    let sum = 0;
    for (let i = 0; i < 10; i++) sum += (d[i]!.toUpperCase() === 'X' ? 10 : Number(d[i])) * (10 - i);
    return sum % 11 === 0;
  }
  if (/^97[89]\d{10}$/.test(d)) {
    let sum = 0;
    for (let i = 0; i < 13; i++) sum += Number(d[i]) * (i % 2 === 0 ? 1 : 3);
    return sum % 10 === 0;
  }
  return false;
}

const NANP = /^(?:\+?1[ .\-]?)?(?:\([2-9]\d{2}\)[ .\-]?|[2-9]\d{2}([ .\-]))\d{3}[ .\-]\d{4}$/;

function phoneVerdict(candidate: string, before: string): string | null {
  const digits = candidate.replace(/\D/g, '');
  const n = digits.length;
  if (n < MIN_PHONE_DIGITS || n > 15) return null;
  const plain = candidate.replace(/^\+\s?/, '');
  for (const re of DATE_LIKE) if (re.test(plain)) return null;
  if (/^(\d)\1+$/.test(digits)) return null;
  if (isbnValid(candidate, n) && candidate.includes('-')) return null;
  const label = nearestLabel(before);
  if (label === 'other') return null;
  const international = candidate.startsWith('+') || /^00[1-9]/.test(candidate);
  const separated = /[\s\-.\/()]/.test(plain);
  const slashes = (candidate.match(/\//g) ?? []).length;
  if (slashes > 1) return null;
  if (slashes === 1 && label !== 'phone') return null;
  // Dotted groups of 1-3 digits are versions / addresses, unless clearly a phone.
  if (/^\d{1,3}(?:\.\d{1,3}){2,}$/.test(plain) && label !== 'phone') return null;
  if (international) {
    if (candidate.startsWith('+') && digits[0] === '0') return null;
    if (n >= 8) return 'international';
    return null;
  }
  if (label === 'phone') {
    // "Mobile app with 1 200 000 downloads": thousands separators, not a number to dial.
    if (/^[1-9]\d{0,2}(?:[ .,]\d{3})+$/.test(plain)) return null;
    return 'labeled';
  }
  if (!separated) return null;
  if (NANP.test(candidate)) {
    const m = NANP.exec(candidate)!;
    // 555-123-4567 needs one kind of separator between the three groups.
    if (m[1] && !candidate.replace(/^\+?1[ .\-]?/, '').slice(3).startsWith(m[1])) return null;
    const seps = new Set(candidate.replace(/^\+?1[ .\-]?/, '').replace(/^\(\d{3}\)/, '').match(/[ .\-]/g) ?? []);
    if (!candidate.includes('(') && seps.size > 1) return null;
    return 'nanp';
  }
  const groups = plain.split(/[\s\-.\/]+/).filter(Boolean);
  // National formats with a trunk prefix: 020 7946 0958, 07700 900123, 06 12 34 56 78, 030 12345678.
  if (/^\(?0[1-9]/.test(plain) && n >= 10 && n <= 12 && groups.length >= 2 && groups.length <= 6) {
    if (groups.some((g) => g.replace(/\D/g, '').length > 8)) return null;
    return 'national';
  }
  // Indian mobile numbers: 98765 43210.
  if (/^[6-9]\d{4}[ \-]\d{5}$/.test(plain)) return 'national';
  return null;
}

// The separators of PHONE_SEP, `(?:[ \t]?[\-.\/][ \t]?|[ \t])`, read by character code, and the
// separators next to a candidate and inside it compared where they stand in the text (offset and
// length), not as strings: this runs for every group of every digit run, where a regular
// expression over a fresh slice costs more than the rest of the phone check.
const isSepSpace = (c: number) => c === 32 || c === 9;
const isSepMark = (c: number) => c === 45 || c === 46 || c === 47;
const isDigitCode = (c: number) => c >= 48 && c <= 57;

/** Length of the PHONE_SEP match at `at` in `text` up to `limit` (0: none); greedy, as a global match takes it. */
function separatorLength(text: string, at: number, limit: number): number {
  if (at >= limit) return 0;
  const c = text.charCodeAt(at);
  if (isSepSpace(c)) {
    if (at + 1 < limit && isSepMark(text.charCodeAt(at + 1))) return at + 2 < limit && isSepSpace(text.charCodeAt(at + 2)) ? 3 : 2;
    return 1;
  }
  if (isSepMark(c)) return at + 1 < limit && isSepSpace(text.charCodeAt(at + 1)) ? 2 : 1;
  return 0;
}

/**
 * Length of the separator that continues the text at `end` towards another group (0: none): what
 * `/^SEP(?=\d|\(\d)/` finds in the four characters from `end`.
 */
function separatorAfter(text: string, end: number): number {
  const limit = Math.min(text.length, end + 4);
  // Longest first, then shorter, as the regular expression backtracks: " - ", " -", " " or "- ", "-".
  for (let length = separatorLength(text, end, limit); length >= 1; length--) {
    const p = end + length;
    if (p >= limit) continue;
    const c = text.charCodeAt(p);
    if (isDigitCode(c) || (c === 40 && p + 1 < limit && isDigitCode(text.charCodeAt(p + 1)))) return length;
  }
  return 0;
}

/** Whether `text[from, to)` is a whole separator: " ", "-", " -", "- ", " - " (any mark, tab for space). */
function isWholeSeparator(text: string, from: number, to: number): boolean {
  const n = to - from;
  const a = text.charCodeAt(from);
  if (n === 1) return isSepSpace(a) || isSepMark(a);
  const b = text.charCodeAt(from + 1);
  if (n === 2) return (isSepSpace(a) && isSepMark(b)) || (isSepMark(a) && isSepSpace(b));
  return n === 3 && isSepSpace(a) && isSepMark(b) && isSepSpace(text.charCodeAt(from + 2));
}

/**
 * Where the separator before `start` that follows a group begins (-1: none): what
 * `/(?<=\d|\d\))SEP$/` finds in the four characters before `start` (the leftmost start wins; the
 * look-behind sees only those characters).
 */
function separatorBefore(text: string, start: number): number {
  const from = Math.max(0, start - 4);
  for (let p = Math.max(from, start - 3); p < start; p++) {
    if (!isWholeSeparator(text, p, start)) continue;
    const afterDigit = p - 1 >= from && isDigitCode(text.charCodeAt(p - 1));
    const afterParen = p - 2 >= from && text.charCodeAt(p - 1) === 41 && isDigitCode(text.charCodeAt(p - 2));
    if (afterDigit || afterParen) return p;
  }
  return -1;
}

/** Whether `text[a, a + length)` and `text[b, b + length)` are the same characters. */
function sameSpan(text: string, a: number, b: number, length: number): boolean {
  for (let k = 0; k < length; k++) if (text.charCodeAt(a + k) !== text.charCodeAt(b + k)) return false;
  return true;
}

/** Whether `text[from, from + length)` holds a "/". */
function hasSlash(text: string, from: number, length: number): boolean {
  for (let k = 0; k < length; k++) if (text.charCodeAt(from + k) === 47) return true;
  return false;
}

/**
 * A part of a longer number (0418 0466 8660 | 8531) is not a phone number: the candidate may not
 * continue, before or after, with the separator it uses inside. A different separator (" / ")
 * lists another number. Without a separator inside, any separator but a slash continues it.
 */
function continuesNumber(text: string, start: number, end: number): boolean {
  const nextLength = separatorAfter(text, end);
  const prevFrom = separatorBefore(text, start);
  const prevLength = prevFrom < 0 ? 0 : start - prevFrom;
  if (nextLength === 0 && prevLength === 0) return false;
  // The separators inside, as a global PHONE_SEP match lists them (a leading "+" and its space excepted).
  let i = start;
  if (text.charCodeAt(i) === 43) {
    i++;
    if (i < end && isSepSpace(text.charCodeAt(i))) i++;
  }
  let inner = false;
  while (i < end) {
    const length = separatorLength(text, i, end);
    if (length === 0) {
      i++;
      continue;
    }
    inner = true;
    if (length === nextLength && sameSpan(text, i, end, length)) return true;
    if (length === prevLength && sameSpan(text, i, prevFrom, length)) return true;
    i += length;
  }
  if (inner) return false;
  return (nextLength > 0 && !hasSlash(text, end, nextLength)) || (prevLength > 0 && !hasSlash(text, prevFrom, prevLength));
}

const PHONE_BEFORE_FORBIDDEN = /[\p{L}\p{N}_\-.\/@#$€£¥%:+=&]/u;
const PHONE_AFTER_FORBIDDEN = /[\p{L}\p{N}_\-\/@%]/u;

/** No phone number has fewer digits. */
export const MIN_PHONE_DIGITS = 7;

/** The ASCII digits in `s`. */
export function countDigits(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 48 && c <= 57) n++;
  }
  return n;
}
const MAX_PHONE_GROUPS = 8;

/** Per ASCII code: whether the character is in `re` (a class of single characters). */
function asciiTable(re: RegExp): Uint8Array {
  return Uint8Array.from({ length: 128 }, (_, c) => (re.test(String.fromCharCode(c)) ? 1 : 0));
}
const BEFORE_FORBIDDEN_ASCII = asciiTable(PHONE_BEFORE_FORBIDDEN);
const AFTER_FORBIDDEN_ASCII = asciiTable(PHONE_AFTER_FORBIDDEN);

/** Whether the character at `at` may not come before a phone number ("-", "$", "#", a letter, ...). */
function forbiddenBefore(text: string, at: number): boolean {
  if (at < 0) return false;
  const c = text.charCodeAt(at);
  return c < 128 ? BEFORE_FORBIDDEN_ASCII[c] === 1 : PHONE_BEFORE_FORBIDDEN.test(text[at]!);
}

/** Whether the text at `at` may not follow a phone number (a letter, "-", "/", or ".", ",", ":" then a digit). */
function forbiddenAfter(text: string, at: number): boolean {
  if (at >= text.length) return false;
  const c = text.charCodeAt(at);
  if (c >= 128) return PHONE_AFTER_FORBIDDEN.test(text[at]!);
  if (AFTER_FORBIDDEN_ASCII[c] === 1) return true;
  return (c === 46 || c === 44 || c === 58) && isDigitCode(text.charCodeAt(at + 1));
}

export function findPhones(text: string): Span[] {
  const out: Span[] = [];
  // Per group of the current candidate (`count` of them): where it starts and ends in `text`;
  // digitsBefore[i]: the digits of groups 0..i-1, so a run's digit count costs nothing to know.
  // The arrays are reused from one candidate to the next (candidates can be many).
  const starts: number[] = [];
  const ends: number[] = [];
  const digitsBefore: number[] = [0];
  for (const m of matches(PHONE_CANDIDATE, text)) {
    const from = m.index;
    const to = from + m[0].length;
    // Most candidates are short numbers (years, counts, amounts): no phone number has under 7 digits.
    if (countDigits(m[0]) < MIN_PHONE_DIGITS) continue;
    // The groups are what lies between separators (as `split` on PHONE_SEP cuts them).
    let count = 0;
    let groupStart = from;
    let digits = 0;
    for (let i = from; i <= to; ) {
      const length = i < to ? separatorLength(text, i, to) : 0;
      if (length === 0 && i < to) {
        if (isDigitCode(text.charCodeAt(i))) digits++;
        i++;
        continue;
      }
      starts[count] = groupStart;
      ends[count] = i;
      digitsBefore[count + 1] = digitsBefore[count]! + digits;
      count++;
      digits = 0;
      if (i === to) break;
      i += length;
      groupStart = i;
    }
    // Left to right, the longest run of groups (at most 15 digits) that is a phone number wins.
    let first = 0;
    while (first < count) {
      let found: Span | null = null;
      const start = starts[first]!;
      // "+1 ..." is part of the candidate; a "-", "$", "#" or letter before means something else
      // (for every run from this group on).
      if (!forbiddenBefore(text, start - 1)) {
        let last = first;
        while (last < count && last - first < MAX_PHONE_GROUPS && digitsBefore[last + 1]! - digitsBefore[first]! <= 15) last++;
        for (let end = last; end > first; end--) {
          // Too few digits: phoneVerdict would say no, whatever the context (and shorter runs have fewer).
          if (digitsBefore[end]! - digitsBefore[first]! < MIN_PHONE_DIGITS) break;
          const stop = ends[end - 1]!;
          if (forbiddenAfter(text, stop) || continuesNumber(text, start, stop)) continue;
          const kind = phoneVerdict(text.slice(start, stop), lineBefore(text, start, 48));
          if (!kind) continue;
          found = { start, end: stop, kind: `phone_${kind}` };
          out.push(found);
          first = end;
          break;
        }
      }
      if (!found) first++;
    }
  }
  return out;
}
