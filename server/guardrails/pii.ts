// PII and secret detection: pure functions, regular expressions plus checksums, no model call.
// Detection runs on a normalised copy of the text (NFKC, no zero-width characters) and every
// match is mapped back to the caller's original string, so redaction never corrupts the rest.
import { isIPv4, isIPv6 } from 'node:net';
import { PII_ENTITIES, type PiiEntity } from './guardrails.types.js';
import { isCardNumber, isValidIban, isValidSsn, shannonEntropy } from './checksums.js';
import { normalizeWithMap, toOriginalSpan, type NormalizedText } from './normalize.js';
import { countDigits, findPhones, MIN_PHONE_DIGITS } from './pii-phones.js';
import { isWordChar, lineBefore, type Span } from './pii-span.js';
import { anchoredMatches, matches, offsetsMatching, offsetsOf } from './regex-scan.js';

export interface PiiMatch {
  entity: PiiEntity;
  /** Offsets in the original string: [start, end). */
  start: number;
  end: number;
  /** Which detector found it (e.g. `aws_access_key`, `nanp`): never the matched text. */
  kind: string;
}

export const PII_PLACEHOLDERS: Record<PiiEntity, string> = {
  email: '[EMAIL]',
  phone: '[PHONE]',
  credit_card: '[CREDIT_CARD]',
  ssn: '[SSN]',
  iban: '[IBAN]',
  ip_address: '[IP_ADDRESS]',
  secret: '[SECRET]',
};

/** When two detectors claim overlapping text, the earlier entity in this list wins. */
const PRIORITY: PiiEntity[] = ['secret', 'email', 'iban', 'credit_card', 'ssn', 'ip_address', 'phone'];

/**
 * The fewest ASCII digits in any match of each entity (its patterns' `\d`, 0-9 only; normalised
 * text has full-width digits as ASCII): a text with fewer is not scanned for it, which spares most
 * short strings (a model's answer fields, names, ids) five of the seven detectors. IBAN: `[A-Z]{2}\d{2}`;
 * card: 12 to 19 digits; SSN and labelled tax ids: 3-2-4; IPv4: four octets, IPv6: one digit at least.
 */
const MIN_DIGITS: Record<PiiEntity, number> = { secret: 0, email: 0, iban: 2, credit_card: 12, ssn: 9, ip_address: 1, phone: MIN_PHONE_DIGITS };


// ---------------------------------------------------------------------------------------------
// E-mail

const EMAIL = /(?<![\p{L}\p{N}._%+\-])[A-Za-z0-9](?:[A-Za-z0-9._%+\-]{0,62}[A-Za-z0-9_%+\-])?@(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,24}(?![\p{L}\p{N}\-]|@)/gu;
const BRACKET_AT = String.raw`\s*[\[({<]\s*at\s*[\])}>]\s*`;
const BRACKET_DOT = String.raw`\s*(?:[\[({<]\s*dot\s*[\])}>]|\.)\s*`;
const OBFUSCATED_EMAIL = new RegExp(
  String.raw`(?<![\p{L}\p{N}._%+\-])[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}${BRACKET_AT}[A-Za-z0-9\-]{1,63}(?:${BRACKET_DOT}[A-Za-z0-9\-]{1,63})*?${BRACKET_DOT}[A-Za-z]{2,24}(?![\p{L}\p{N}\-])`,
  'giu',
);
/** Retina image names (`logo@2x.png`) look like addresses. */
const IMAGE_SUFFIX = /@\d+(?:\.\d+)?x\.(?:png|jpe?g|gif|svg|webp|avif)$/i;
/** The bracketed "at" of an obfuscated address. */
const BRACKETED_AT = /[\[({<]\s*at\s*[\])}>]/giu;
/** Longest local part: the "@" (or the space before the bracketed "at") is at most this far from the start of an address. */
const LOCAL_PART_MAX = 64;

/** Where the spaces before each bracketed "at" begin: an obfuscated address's local part ends there. */
function obfuscatedAtAnchors(text: string): number[] | null {
  return (
    offsetsMatching(BRACKETED_AT, text)?.map((at) => {
      let from = at;
      while (from > 0 && /\s/.test(text[from - 1]!)) from--;
      return from;
    }) ?? null
  );
}

function findEmails(text: string): Span[] {
  const out: Span[] = [];
  if (!text.includes('@')) {
    if (!/[\[({<]\s*at\s*[\])}>]/i.test(text)) return out;
  } else {
    for (const m of anchoredMatches(EMAIL, text, offsetsOf(text, '@'), LOCAL_PART_MAX)) {
      if (IMAGE_SUFFIX.test(m[0])) continue;
      // `git@github.com:org/repo.git` is an SSH remote, not an address.
      if (text[m.index + m[0].length] === ':' && /[\w~\/]/.test(text[m.index + m[0].length + 1] ?? '')) continue;
      out.push({ start: m.index, end: m.index + m[0].length, kind: 'email' });
    }
  }
  for (const m of anchoredMatches(OBFUSCATED_EMAIL, text, obfuscatedAtAnchors(text), LOCAL_PART_MAX)) {
    out.push({ start: m.index, end: m.index + m[0].length, kind: 'obfuscated_email' });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Secrets

export const SECRET_PATTERNS: { kind: string; re: RegExp; needsDigit?: boolean }[] = [
  { kind: 'private_key', re: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)/g },
  { kind: 'jwt', re: /\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*/g },
  { kind: 'openai_key', re: /(?<![\p{L}\p{N}_\-])sk-(?:proj-|svcacct-|admin-|ant-(?:api\d\d-|admin\d\d-)?|live-|test-)?[A-Za-z0-9_\-]{20,}/gu, needsDigit: true },
  { kind: 'stripe_key', re: /\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}/g },
  { kind: 'liya_api_key', re: /\bsvc_[A-Za-z0-9_\-]{20,}/g },
  { kind: 'aws_access_key', re: /\b(?:AKIA|ASIA|AGPA|AIDA|AROA|AIPA|ANPA|ANVA|ABIA|ACCA)[A-Z0-9]{16}\b/g },
  { kind: 'github_token', re: /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})/g },
  { kind: 'gitlab_token', re: /\bglpat-[A-Za-z0-9_\-]{20,}/g },
  { kind: 'slack_token', re: /\bxox[abposr]-[A-Za-z0-9\-]{10,}/g },
  { kind: 'slack_webhook', re: /https:\/\/hooks\.slack\.com\/services\/[A-Za-z0-9\/_\-]{20,}/g },
  { kind: 'google_api_key', re: /\bAIza[0-9A-Za-z_\-]{35}(?![A-Za-z0-9_\-])/g },
  { kind: 'npm_token', re: /\bnpm_[A-Za-z0-9]{36}\b/g },
  { kind: 'huggingface_token', re: /\bhf_[A-Za-z0-9]{30,}\b/g },
  { kind: 'url_credentials', re: /\b[a-z][a-z0-9+.\-]{0,30}:\/\/[^\s:@\/]{1,64}:([^\s@\/]{3,128})@/gi },
  { kind: 'bearer_token', re: /\bBearer\s+([A-Za-z0-9._~+\/\-]{20,}=*)/g },
];

/**
 * Every match of SECRET_PATTERNS contains one of these literals (its pattern's fixed part, in the
 * pattern's own case): a text without any of them skips the fifteen scans, one per pattern, that
 * would each find nothing. A new pattern adds its literal here (test/guardrails/pii-secrets.test.ts
 * checks each kind's example).
 */
const SECRET_LITERAL = /-----BEGIN |eyJ|sk-|[spr]k_(?:live|test)_|svc_|A(?:KIA|SIA|GPA|IDA|ROA|IPA|NPA|NVA|BIA|CCA)|gh[pousr]_|github_pat_|glpat-|xox[abposr]-|AIza|npm_|hf_|:\/\/|Bearer/;

// An identifier that names a credential, then `:`/`=`, then the value.
const LABELED_SECRET = /(?<![\p{L}\p{N}])([\w.\-]{0,40}?(?:api[_\-]?key|apikey|secret|token|passw(?:or)?d|pwd|passphrase|access[_\-]?key|private[_\-]?key|credentials?|auth[_\-]?key|signing[_\-]?key)[\w.\-]{0,40})["']?[ \t]*(?:=>|:=|[:=]|\bis\b)[ \t]*["'`]?([^\s"'`,;<>(){}\[\]]{6,})/giu;
// "login: jdoe / Blue-Horse-42": a user name, a slash or colon, then the password.
const CREDENTIAL_PAIR = /\b(?:log ?in|login details|credentials?|creds|account|user(?:name)?\s*\/\s*pass(?:word)?)\b[^\n:]{0,30}:\s*[\w.@+\-]{2,64}\s*(?:\/|\s\|\s)\s*([^\s"'`<>]{6,64})/gi;
const PLACEHOLDER = /^(?:x{3,}|\*{3,}|\.{3,}|-+|_+|\$\{|\$[A-Z_]+|%[A-Z_]+%|\{\{|<|your[_\-]|my[_\-]|changeme|change[_\-]me|password\d*$|passw0rd$|secret$|redacted|none$|null$|nil$|undefined|example|sample|placeholder|dummy|test$|fake|todo|tbd|n\/a|required|optional|process\.env|os\.environ|os\.getenv|env\.|getenv|config\.|settings\.|self\.|this\.|true$|false$)/i;

function charClasses(value: string): number {
  let n = 0;
  if (/[a-z]/.test(value)) n++;
  if (/[A-Z]/.test(value)) n++;
  if (/\d/.test(value)) n++;
  if (/[^A-Za-z0-9_.\-]/.test(value)) n++;
  return n;
}

function looksLikeSecretValue(label: string, raw: string): boolean {
  const value = raw.replace(/[.:]+$/, '');
  if (PLACEHOLDER.test(value)) return false;
  // URLs and file paths are not secrets.
  if (/^(?:[a-z][a-z0-9+.\-]*:\/\/|\.{0,2}\/|~\/|[A-Za-z]:\\)/i.test(value)) return false;
  if (/^[\w.\-]+(?:\/[\w.\-]+)+$/.test(value) && !/\d/.test(value)) return false;
  if (/^\d+(?:\.\d+)?$/.test(value)) return false;
  const isPassword = /passw|pwd|passphrase/i.test(label);
  if (isPassword) {
    return value.length >= 8 && charClasses(value) >= 2;
  }
  // Identifiers (snake_case / camelCase names, dotted paths) are code, not secrets.
  if (/^[a-z]+(?:[_\-.][a-z]+)*$/i.test(value)) return false;
  return value.length >= 16 && charClasses(value) >= 2 && shannonEntropy(value) >= 3.2;
}

// Where a credential word of LABELED_SECRET starts; the label holds at most 40 characters before it.
const CREDENTIAL_WORD = /api[_\-]?key|apikey|secret|token|passw(?:or)?d|pwd|passphrase|access[_\-]?key|private[_\-]?key|credentials?|auth[_\-]?key|signing[_\-]?key/giu;
const LABEL_LEAD = 40;
// url_credentials: the scheme (at most 31 characters) comes before "://".
const SCHEME_LEAD = 31;

function secretMatches(kind: string, re: RegExp, text: string): Iterable<RegExpExecArray> {
  return kind === 'url_credentials' ? anchoredMatches(re, text, offsetsOf(text, '://'), SCHEME_LEAD) : matches(re, text);
}

function findSecrets(text: string): Span[] {
  const out: Span[] = [];
  for (const { kind, re, needsDigit } of SECRET_LITERAL.test(text) ? SECRET_PATTERNS : []) {
    for (const m of secretMatches(kind, re, text)) {
      if (needsDigit && !/\d/.test(m[0])) continue;
      if (kind === 'bearer_token' || kind === 'url_credentials') {
        const value = m[1]!;
        if (kind === 'bearer_token' && shannonEntropy(value) < 3.2) continue;
        if (PLACEHOLDER.test(value)) continue;
        const start = m.index + m[0].lastIndexOf(value);
        out.push({ start, end: start + value.length, kind });
        continue;
      }
      out.push({ start: m.index, end: m.index + m[0].length, kind });
    }
  }
  for (const m of matches(CREDENTIAL_PAIR, text)) {
    const value = m[1]!.replace(/[.,;:]+$/, '');
    if (value.length < 6 || charClasses(value) < 2 || PLACEHOLDER.test(value)) continue;
    const start = m.index + m[0].length - m[1]!.length;
    out.push({ start, end: start + value.length, kind: 'credential_pair' });
  }
  for (const m of anchoredMatches(LABELED_SECRET, text, offsetsMatching(CREDENTIAL_WORD, text), LABEL_LEAD)) {
    const label = m[1]!;
    const value = m[2]!.replace(/[.:]+$/, '');
    if (!looksLikeSecretValue(label, value)) continue;
    const start = m.index + m[0].length - m[2]!.length;
    out.push({ start, end: start + value.length, kind: 'labeled_secret' });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// IBAN

const IBAN_CANDIDATE = /(?<![\p{L}\p{N}])[A-Z]{2}\d{2}(?: ?[A-Z0-9]){8,32}/giu;

function findIbans(text: string): Span[] {
  const out: Span[] = [];
  for (const m of matches(IBAN_CANDIDATE, text)) {
    // Walk the candidate collecting alphanumerics; the longest prefix that is a valid IBAN and
    // ends at a word boundary wins (the candidate may have swallowed a following word).
    let count = 0;
    let compact = '';
    let best: number | null = null;
    for (let i = 0; i < m[0].length; i++) {
      const ch = m[0][i]!;
      if (ch === ' ') continue;
      compact += ch;
      count++;
      if (count >= 15 && count <= 34 && !isWordChar(text[m.index + i + 1]) && isValidIban(compact)) best = i + 1;
    }
    if (best !== null) {
      out.push({ start: m.index, end: m.index + best, kind: 'iban' });
      IBAN_CANDIDATE.lastIndex = m.index + best;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Credit cards

const CARD_CANDIDATE = /(?<![\p{L}\p{N}_\-.,\/])\d(?:[ \-]?\d){11,18}(?![\p{L}\p{N}_\-\/]|[.,]\d)/gu;

/** Twelve digits with at most one space or "-" between two: every CARD_CANDIDATE match holds such a run (this pattern, without the look-behind, is a quick scan). */
const CARD_DIGITS = /\d(?:[ \-]?\d){11}/;

function findCards(text: string): Span[] {
  const out: Span[] = [];
  if (!CARD_DIGITS.test(text)) return out;
  for (const m of matches(CARD_CANDIDATE, text)) {
    const raw = m[0];
    // One kind of separator (space or "-"), and cards are printed in groups of 4 (or 4-6-5 /
    // 4-6-4): single digits apart are something else. Every group but the last is checked, where
    // the separator after it is read (one pass over the characters: candidates can be many).
    let separator = 0;
    let rejected = false;
    let groupLength = 0;
    for (let i = 0; i < raw.length && !rejected; i++) {
      const c = raw.charCodeAt(i);
      if (c !== 32 && c !== 45) {
        groupLength++;
        continue;
      }
      rejected = (separator !== 0 && separator !== c) || groupLength < 4 || groupLength > 6;
      separator = c;
      groupLength = 0;
    }
    if (rejected) continue;
    if (!isCardNumber(separator === 0 ? raw : raw.replace(/\D/g, ''))) continue;
    out.push({ start: m.index, end: m.index + raw.length, kind: 'credit_card' });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// US SSN

const SSN_DASHED = /(?<![\p{L}\p{N}_\-.\/])(\d{3})([\- ])(\d{2})\2(\d{4})(?![\p{L}\p{N}_\-\/]|[.,]\d)/gu;
const SSN_BARE = /(?<![\p{L}\p{N}_\-.\/])(\d{3})(\d{2})(\d{4})(?![\p{L}\p{N}_\-\/]|[.,]\d)/gu;
const SSN_LABEL = /\b(?:ssn|ss#|ss no|ssa|social security(?: number| no\.?| #)?|social sec(?:urity)?\.?|taxpayer id|tin|itin)\b[^\n\d]{0,16}$/i;

// Words that name a tax identifier. A 9-digit number right after one is redacted whatever its
// area or checksum: "SSN 987-65-4321" is out of the SSN ranges but in the ITIN range, and the text
// says what it is. Unlabelled numbers keep the validity rules above (order numbers, phone numbers).
const TAX_ID_LABEL = String.raw`(?:ssn|ss#|ss no|itin|tin|social security(?: number| no\.?| #)?|social sec(?:urity)?\.?|tax ?id(?:entification)?(?: number| no\.?)?|taxpayer id(?:entification)?(?: number| no\.?)?)`;
// "social" alone is everyday language ("social events on 05-12"): it labels only a number that
// follows at once. Another label and its number are at most 24 characters apart ("SSN of the
// applicant: 987-65-4321"), none of them a digit or a line break (so the number cannot be the
// tail of a longer one), and a "-" may join them ("SSN-987-65-4321").
const LABELED_TAX_ID = new RegExp(
  String.raw`(?<![\p{L}\p{N}_])(?:${TAX_ID_LABEL}(?![\p{L}\p{N}_])[^\n\d]{0,24}?|social[ \t]*[:#=\-]?[ \t]*)(?<![\p{L}\p{N}_.\/])(\d{3})([\- .]?)(\d{2})\2(\d{4})(?![\p{L}\p{N}_\-\/]|[.,]\d)`,
  'giu',
);
/** The first letters of every label: a match starts exactly there (the anchored scan needs no lead). */
const TAX_ID_LABEL_START = /ss|itin|tin|social|tax/giu;

/** 3-2-4 digits, each gap empty or one of " -.": every match of SSN_DASHED, SSN_BARE and LABELED_TAX_ID holds one (a quick scan: no look-behind, no Unicode classes). */
const SSN_DIGITS = /\d{3}[\- .]?\d{2}[\- .]?\d{4}/;

function findSsns(text: string): Span[] {
  const out: Span[] = [];
  if (!SSN_DIGITS.test(text)) return out;
  for (const m of matches(SSN_DASHED, text)) {
    if (!isValidSsn(m[1]!, m[3]!, m[4]!)) continue;
    // Space-separated 3-2-4 groups are an SSN only when the text says so.
    if (m[2] === ' ' && !SSN_LABEL.test(lineBefore(text, m.index))) continue;
    out.push({ start: m.index, end: m.index + m[0].length, kind: 'ssn' });
  }
  for (const m of matches(SSN_BARE, text)) {
    if (!isValidSsn(m[1]!, m[2]!, m[3]!)) continue;
    if (!SSN_LABEL.test(lineBefore(text, m.index))) continue;
    out.push({ start: m.index, end: m.index + m[0].length, kind: 'ssn' });
  }
  const seen = new Set(out.map((span) => span.start));
  for (const m of anchoredMatches(LABELED_TAX_ID, text, offsetsMatching(TAX_ID_LABEL_START, text), 0)) {
    const number = m[1]! + m[2]! + m[3]! + m[2]! + m[4]!;
    const start = m.index + m[0].length - number.length;
    if (seen.has(start)) continue;
    out.push({ start, end: start + number.length, kind: 'labeled_tax_id' });
  }
  return out.sort((a, b) => a.start - b.start);
}

// ---------------------------------------------------------------------------------------------
// IP addresses

const IPV4 = /(?<![\p{L}\p{N}_.\-])(?:\d{1,3}\.){3}\d{1,3}(?:\/\d{1,2})?(?![\p{L}\p{N}_\-]|\.\d)/gu;
/** Dotted numbers after these words are versions, sections or identifiers, not addresses. */
const VERSION_CONTEXT = /(?:\b(?:v|ver|version|versions|release|rel|build|firmware|fw|sdk|kernel|patch|upgrade|section|sec|chapter|ch|clause|article|art|rule|step|figure|fig|table|tbl|isbn|oid|node|python|java|chrome|firefox|safari|ios|android|macos|windows|ubuntu|debian|rhel|centos|postgres|postgresql|mysql|redis|react|angular|vue|django|rails|spring|gradle|maven|npm|pip|golang|rust|ruby|php|dotnet|kotlin|swift|scala|elixir|erlang|terraform|kubernetes|k8s|docker|helm)|§)\.?\s*[:=]?\s*$/i;

const IPV6 = /(?<![\p{L}\p{N}_:.\-])\[?((?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{0,4}|(?:\d{1,3}\.){3}\d{1,3}))(?:%[\w.]+)?\]?(?![\p{L}\p{N}_:]|\.[\p{L}\p{N}]|-\w)/gu;

const IPV4_DOTS = /\d\.\d{1,3}\.\d{1,3}\.\d/;
const IPV6_COLONS = /:[0-9A-Fa-f]{0,4}:/;

function findIps(text: string): Span[] {
  const out: Span[] = [];
  // Four dotted numbers for IPv4; two colons at most four hex digits apart for IPv6 (its two
  // `X:` groups at least): quick scans, before the patterns with Unicode look-arounds.
  if (IPV4_DOTS.test(text)) {
    for (const m of matches(IPV4, text)) {
      const address = m[0].split('/')[0]!;
      if (!isIPv4(address)) continue; // rejects octets > 255 and leading zeros
      if (VERSION_CONTEXT.test(lineBefore(text, m.index, 24))) continue;
      out.push({ start: m.index, end: m.index + m[0].length, kind: 'ipv4' });
    }
  }
  if (IPV6_COLONS.test(text)) {
    // The first ":" of an address comes after at most "[" and four hex digits.
    for (const m of anchoredMatches(IPV6, text, offsetsOf(text, ':'), 5)) {
      const address = m[1]!;
      if (!isIPv6(address)) continue;
      const hexDigits = address.replace(/[^0-9A-Fa-f]/g, '').length;
      const groups = address.split(':').filter(Boolean).length;
      const loopbackLike = /^::(?:ffff:)?[\d.:a-f]*\d/i.test(address); // ::1, ::ffff:192.0.2.1
      if ((hexDigits < 3 && !loopbackLike) || !/\d/.test(address)) continue; // `::`, `add::`, `Foo::bar`
      if (!address.includes('::') && groups < 8) continue;
      const start = m.index + m[0].indexOf(address);
      out.push({ start, end: start + address.length, kind: 'ipv6' });
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

const DETECTORS: Record<PiiEntity, (text: string) => Span[]> = {
  secret: findSecrets,
  email: findEmails,
  iban: findIbans,
  credit_card: findCards,
  ssn: findSsns,
  ip_address: findIps,
  phone: findPhones,
};

/**
 * Every PII match in `text` for the given entities (default: all), as non-overlapping spans of
 * the original string, sorted by position.
 */
export function detectPii(text: string, entities: readonly PiiEntity[] = PII_ENTITIES): PiiMatch[] {
  if (!text || entities.length === 0) return [];
  return detectPiiNormalized(normalizeWithMap(text), entities);
}

/** detectPii on text already normalised (one normalisation serves every detector of a scan). */
export function detectPiiNormalized(normalized: NormalizedText, entities: readonly PiiEntity[] = PII_ENTITIES): PiiMatch[] {
  if (!normalized.text || entities.length === 0) return [];
  const wanted = new Set(entities);
  const accepted: PiiMatch[] = [];
  // Offsets claimed by higher-priority entities, even those the caller did not ask for: a phone
  // inside an API key is not a phone. One flag per offset keeps the check linear.
  const claimed = new Uint8Array(normalized.text.length);
  const overlapsClaimed = (span: Span) => {
    for (let i = span.start; i < span.end; i++) if (claimed[i]) return true;
    return false;
  };
  const digits = countDigits(normalized.text);
  for (const entity of PRIORITY) {
    if (!wanted.has(entity) && entity !== 'secret' && entity !== 'email' && entity !== 'iban' && entity !== 'credit_card') continue;
    if (digits < MIN_DIGITS[entity]) continue;
    for (const span of DETECTORS[entity](normalized.text)) {
      if (overlapsClaimed(span)) continue;
      claimed.fill(1, span.start, span.end);
      if (!wanted.has(entity)) continue;
      const [start, end] = toOriginalSpan(normalized, span.start, span.end);
      accepted.push({ entity, start, end, kind: span.kind });
    }
  }
  return accepted.sort((a, b) => a.start - b.start);
}

export interface RedactionResult {
  text: string;
  matches: PiiMatch[];
}

/** Replaces every match with its placeholder (`[EMAIL]`, `[PHONE]`, ...). */
export function redactPii(text: string, entities: readonly PiiEntity[] = PII_ENTITIES): RedactionResult {
  const found = detectPii(text, entities);
  return { text: applyRedactions(text, found), matches: found };
}

export function applyRedactions(text: string, found: readonly PiiMatch[]): string {
  if (found.length === 0) return text;
  let out = '';
  let cursor = 0;
  for (const match of found) {
    out += text.slice(cursor, match.start) + PII_PLACEHOLDERS[match.entity];
    cursor = match.end;
  }
  return out + text.slice(cursor);
}
