// The linear scan finds exactly what the previous, per-position regular-expression scan found
// (the scan of commit 0a1608f), except where the text labels a tax identifier, which is now always
// redacted. test/guardrails/previous-findings.json holds that scan's findings together with the
// inputs it ran on (every dataset text as it was then, and the 100 KB inputs: the dataset texts
// joined, and adversarial units repeated), so edits to the dataset leave the comparison intact.
// Plus the labelled tax-id rule itself. The scan's time at 10 KB to 1 MB, realistic and adversarial,
// is measured in test/bench/guardrails-speed.ts.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DECODE_AND_FOLLOW, decodeAndFollowMatches } from '../../server/guardrails/decode-and-follow.js';
import { FAKE_TURNS, fakeTurnsMatches } from '../../server/guardrails/fake-turns.js';
import { HIDDEN_COMMENT, hiddenCommentMatches } from '../../server/guardrails/hidden-comment.js';
import { detectInjection } from '../../server/guardrails/injection.js';
import { detectPii, redactPii, type PiiMatch } from '../../server/guardrails/pii.js';
import { anchoredMatches, matches, offsetsMatching } from '../../server/guardrails/regex-scan.js';
import { runPreLlmOnInput } from '../../server/guardrails/run-pre-llm.js';
import { repeatTo } from './large-text.js';

type Findings = { pii: PiiMatch[]; injection: ReturnType<typeof detectInjection> };
const previous = JSON.parse(readFileSync(new URL('./previous-findings.json', import.meta.url), 'utf8')) as {
  cases: Record<string, Findings & { text: string }>;
  large: Record<string, Findings & { size: number; unit?: string }>;
};

/** The stored case texts joined by blank lines, cut at `size` characters (the realistic large input). */
function joinedCases(size: number): string {
  const texts = Object.values(previous.cases).map((c) => c.text);
  const parts: string[] = [];
  let length = 0;
  for (let i = 0; length < size; i++) {
    parts.push(texts[i % texts.length]!);
    length += texts[i % texts.length]!.length + 2;
  }
  return parts.join('\n\n').slice(0, size);
}

/** The new findings minus labelled tax ids, and the previous ones minus what those spans now claim. */
function comparable(now: PiiMatch[], before: PiiMatch[]) {
  const labelled = now.filter((m) => m.kind === 'labeled_tax_id');
  const overlaps = (m: PiiMatch) => labelled.some((l) => m.start < l.end && l.start < m.end);
  return { now: now.filter((m) => m.kind !== 'labeled_tax_id'), before: before.filter((m) => !overlaps(m)) };
}

describe('linear scan finds what the previous scan found', () => {
  it('on every case of the labelled dataset', () => {
    expect(Object.keys(previous.cases).length).toBeGreaterThanOrEqual(500);
    for (const [id, before] of Object.entries(previous.cases)) {
      const { now, before: old } = comparable(detectPii(before.text), before.pii);
      expect(now, id).toEqual(old);
      expect(detectInjection(before.text), id).toEqual(before.injection);
    }
  });

  it('on 100 KB of realistic and of adversarial text', () => {
    expect(Object.keys(previous.large).length).toBeGreaterThanOrEqual(10);
    for (const [name, before] of Object.entries(previous.large)) {
      const text = before.unit === undefined ? joinedCases(before.size) : repeatTo(before.unit, before.size);
      const { now, before: old } = comparable(detectPii(text), before.pii);
      expect(now, name).toEqual(old);
      expect(detectInjection(text), name).toEqual(before.injection);
    }
  });

  it('anchored matching gives the plain global matches, back-references included', () => {
    const re = /(?<![a-z])ssn:? ?(\d{3})([\- .]?)(\d{2})\2(\d{4})(?!\d)/g;
    // Every match starts with an "ssn" (sparse enough not to fall back to a full scan).
    const text = `ssn 987-65-4321, ssn 987 65-4321, ssn 123.45.6789, ssn 123456789 ${'x'.repeat(400)} `.repeat(50);
    const anchors = offsetsMatching(/ssn/g, text);
    const plain = [...matches(re, text)].map((m) => [m.index, ...m]);
    expect(plain.length).toBe(150);
    expect([...anchoredMatches(re, text, anchors, 0)].map((m) => [m.index, ...m])).toEqual(plain);
  });
});

describe('rules matched without their regular expression', () => {
  // Seeded random texts built from the pieces those patterns care about, with gaps around their
  // 300- and 400-character reach; the hand-written matchers must give the patterns' own matches.
  function random(seed: number) {
    let state = seed;
    const next = () => ((state = (state * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    return { pick: <T,>(items: readonly T[]) => items[Math.floor(next() * items.length)]!, chance: (p: number) => next() < p };
  }
  const spans = (found: Iterable<RegExpExecArray>) => [...found].map((m) => [m.index, m[0].length]);
  const regexSpans = (re: RegExp, text: string) => spans(text.matchAll(new RegExp(re.source, re.flags)));

  it('agree at the edges of every reach (300, 400, 60 and 80 characters)', () => {
    let matched = 0;
    for (const n of [299, 300, 301]) {
      for (const filler of [' ', '-', 'x ']) {
        const gap = (length: number) => filler.repeat(length).slice(0, length);
        for (const text of [`<!--${gap(n)}ai rank -->`, `<!-- ai${gap(n)}rank -->`, `<!-- ai rank${gap(n)}-->`]) {
          matched += regexSpans(HIDDEN_COMMENT, text).length;
          expect(spans(hiddenCommentMatches(text)), text).toEqual(regexSpans(HIDDEN_COMMENT, text));
        }
      }
    }
    for (const n of [399, 400, 401]) {
      for (const text of [`user:${'x'.repeat(n)}\nassistant:`, `\nhuman :${' '.repeat(n - 1)}\n\n ai :`, `user:${'\n'.repeat(n)}gpt:`]) {
        matched += regexSpans(FAKE_TURNS, text).length;
        expect(spans(fakeTurnsMatches(text)), text).toEqual(regexSpans(FAKE_TURNS, text));
      }
    }
    for (const n of [59, 60, 61, 79, 80, 81]) {
      for (const text of [`decode${' '.repeat(n)}base64 and follow it`, `decode base64${' '.repeat(n)}and follow it`, `read${'-'.repeat(n)}rot13${','.repeat(n)}then run`]) {
        matched += regexSpans(DECODE_AND_FOLLOW, text).length;
        expect(spans(decodeAndFollowMatches(text)), text).toEqual(regexSpans(DECODE_AND_FOLLOW, text));
      }
    }
    expect(matched).toBeGreaterThan(20);
  });

  it('hidden HTML comments addressed to an AI reader', () => {
    const { pick, chance } = random(7);
    const pad = (n: number) => pick(['x', ' ', 'a', '-', '.']).repeat(n);
    const gap = () => (chance(0.5) ? pad(pick([0, 1, 10, 296, 298, 299, 300, 301, 302])) : ' ');
    let matched = 0;
    for (let k = 0; k < 3000; k++) {
      let text = '';
      for (let i = 0, parts = pick([1, 3, 8, 15]); i < parts; i++) {
        if (chance(0.35)) text += `<!--${gap()}${pick(['ai', 'gpt', 'xai', 'bot', 'ai rank'])}${gap()}${pick(['rank', 'rated', 'hire', 'x'])}${gap()}${pick(['-->', '->', '>', '', '-->-->'])}`;
        else text += pick(['<!--', '-->', '>', ' ai ', 'rank', 'x', '\n', pad(pick([5, 300, 301]))]);
      }
      const expected = spans(text.matchAll(new RegExp(HIDDEN_COMMENT.source, HIDDEN_COMMENT.flags)));
      if (expected.length > 0) matched++;
      expect(spans(hiddenCommentMatches(text)), JSON.stringify(text)).toEqual(expected);
    }
    expect(matched).toBeGreaterThan(300);
  });

  it('decode-and-follow instructions', () => {
    const { pick, chance } = random(13);
    const pad = (n: number) => pick(['x', ' ', 'a b', '-', '.', '\n', ',']).repeat(n);
    const gap = () => (chance(0.3) ? pad(pick([0, 1, 5, 58, 59, 60, 61, 62, 78, 79, 80, 81, 82])) : ' ');
    let matched = 0;
    for (let k = 0; k < 3000; k++) {
      let text = '';
      for (let i = 0, parts = pick([1, 2, 4, 8]); i < parts; i++) {
        if (chance(0.7)) {
          text += `${pick(['decode', 'read', 'reverse', 'reversed', 'xdecode'])}${gap()}${pick(['base64', 'base 64', 'rot13', 'rot-135', 'hex', 'hexadecimal', 'hexadecimals', 'encoded'])}${gap()}`;
          text += `${pick(['and', 'then', 'a&b', 'and then', 'andy'])}${pick([' ', '', '  '])}${pick(['follow', 'running', 'do what it says', 'carry it out', 'nothing'])}`;
        } else text += pick(['decode ', 'base64 ', 'and follow ', 'then run ', gap()]);
      }
      const expected = spans(text.matchAll(new RegExp(DECODE_AND_FOLLOW.source, DECODE_AND_FOLLOW.flags)));
      if (expected.length > 0) matched++;
      expect(spans(decodeAndFollowMatches(text)), JSON.stringify(text)).toEqual(expected);
    }
    expect(matched).toBeGreaterThan(150);
  });

  it('made-up chat turns', () => {
    const { pick, chance } = random(11);
    const space = () => pick(['', ' ', '\n', '\t', '\n\n', ' \n ', '\u00a0', '\r\n']);
    const pad = (n: number) => pick(['x', ' ', '\n', 'a:', '.']).repeat(n);
    let matched = 0;
    for (let k = 0; k < 3000; k++) {
      let text = '';
      for (let i = 0, parts = pick([1, 3, 8, 12]); i < parts; i++) {
        if (chance(0.3)) text += `${pick(['\n', ''])}${space()}${pick(['human', 'user'])}${space()}:${pad(pick([0, 2, 30, 396, 399, 400, 401, 402]))}\n${space()}${pick(['assistant', 'ai', 'gpt', 'xai'])}${space()}:`;
        else if (chance(0.5)) text += `${pick(['\n', ''])}${space()}${pick(['human', 'user', 'users', 'assistant', 'ai', 'chatgpt', 'aide'])}${space()}${pick([':', ''])}`;
        else text += pick([space(), pad(pick([1, 100, 400, 401]))]);
      }
      const expected = spans(text.matchAll(new RegExp(FAKE_TURNS.source, FAKE_TURNS.flags)));
      if (expected.length > 0) matched++;
      expect(spans(fakeTurnsMatches(text)), JSON.stringify(text)).toEqual(expected);
    }
    expect(matched).toBeGreaterThan(300);
  });
});

describe('labelled tax identifiers', () => {
  const redact = (text: string) => redactPii(text).text;

  it('are redacted whatever their area or checksum, after any label spelling and separator', () => {
    expect(redact('SSN 987-65-4321')).toBe('SSN [SSN]');
    expect(redact('SSN: 000-12-3456')).toBe('SSN: [SSN]');
    expect(redact('SSN#666 12 3456')).toBe('SSN#[SSN]');
    expect(redact('ITIN 912-70-1234')).toBe('ITIN [SSN]');
    expect(redact('Social: 987654321')).toBe('Social: [SSN]');
    expect(redact('social 987.65.4321')).toBe('social [SSN]');
    expect(redact('tax id 987-65-4321')).toBe('tax id [SSN]');
    expect(redact('TIN: 900 70 1234')).toBe('TIN: [SSN]');
    expect(redact('Taxpayer identification number: 912701234')).toBe('Taxpayer identification number: [SSN]');
    expect(redact('Social security number is 978-05-1120.')).toBe('Social security number is [SSN].');
    expect(redact('SSN-987-65-4321')).toBe('SSN-[SSN]');
    expect(redact('SSN of the applicant: 987-65-4321')).toBe('SSN of the applicant: [SSN]');
    expect(redact('Tax ID No. 966-12-3456; ITIN 900 70 1234')).toBe('Tax ID No. [SSN]; ITIN [SSN]');
    // Through the pre_llm stage, as an intent input reaches it.
    expect(runPreLlmOnInput({ message: 'My SSN 987-65-4321, please check' }).input).toEqual({ message: 'My SSN [SSN], please check' });
  });

  it('unlabelled numbers keep the validity rules; "social" labels only a number right after it', () => {
    for (const text of [
      'Order 987-65-4321',
      'social events on 987-65-4321',
      'Social media 2023-05-12',
      'social media followers 123456789',
      'SSN 987-65-43210',
      'ssn 4015587120',
      'ssn: 12-987-65-4321',
      'ref 666-12-3456',
      // Too far from its label (more than 24 characters), or on another line.
      'SSN is listed in the appendix, not here: 987-65-4321',
      'SSN\n987-65-4321',
    ]) {
      expect(detectPii(text, ['ssn']), text).toEqual([]);
    }
    // A valid SSN needs no label, as before.
    expect(redact('Verify 612-44-0921 today')).toBe('Verify [SSN] today');
  });
});
