// Unit tests of the chunking strategies (server/documents/chunk-text.ts).
import { describe, expect, it } from 'vitest';
import { chunkDocument, chunkText, DEFAULT_CHUNKING } from '../../server/documents/chunk-text.js';

const words = (n: number, word = 'word') => Array.from({ length: n }, (_, i) => `${word}${i}`).join(' ');

describe('fixed', () => {
  it('cuts the text into consecutive pieces of `size` characters', () => {
    const text = 'abcdefghij'.repeat(25); // 250 characters
    const chunks = chunkText(text, { strategy: 'fixed', size: 100, overlap: 40 });
    expect(chunks.map((c) => c.text.length)).toEqual([100, 100, 50]);
    expect(chunks.map((c) => c.text).join('')).toBe(text); // no overlap, nothing lost
    expect(chunks.every((c) => c.locator === null)).toBe(true);
  });

  it('a text shorter than size is one chunk; blank text is none', () => {
    expect(chunkText('short', { strategy: 'fixed', size: 100, overlap: 0 })).toEqual([{ text: 'short', locator: null }]);
    expect(chunkText('  \n\n ', { strategy: 'fixed', size: 100, overlap: 0 })).toEqual([]);
  });

  it('never splits a surrogate pair', () => {
    const text = `${'a'.repeat(9)}😀${'b'.repeat(10)}`;
    const chunks = chunkText(text, { strategy: 'fixed', size: 10, overlap: 0 });
    expect(chunks.map((c) => c.text).join('')).toBe(text);
    for (const chunk of chunks) expect(chunk.text).not.toMatch(/[\ud800-\udbff]$/);
  });
});

describe('sliding_window', () => {
  it('windows of `size` characters, each starting `size - overlap` after the previous one', () => {
    // Every character distinct, so a window's position in the text is unambiguous.
    const text = Array.from({ length: 300 }, (_, i) => String.fromCharCode(0x4e00 + i)).join('');
    const chunks = chunkText(text, { strategy: 'sliding_window', size: 100, overlap: 30 });
    expect(chunks.map((c) => c.text.length)).toEqual([100, 100, 100, 90]);
    for (let i = 1; i < chunks.length; i++) {
      // Each window repeats the last `overlap` characters of the previous one.
      expect(chunks[i].text.slice(0, 30)).toBe(chunks[i - 1].text.slice(70));
      expect(text.indexOf(chunks[i].text)).toBe(i * 70);
    }
    expect(chunks.at(-1)!.text.endsWith(text.slice(-10))).toBe(true);
  });

  it('an overlap not below size is clamped so windows still advance', () => {
    const chunks = chunkText('x'.repeat(50), { strategy: 'sliding_window', size: 10, overlap: 10 });
    expect(chunks.length).toBe(41);
    expect(chunks.every((c) => c.text.length === 10)).toBe(true);
  });

  it('fixed and sliding windows name the heading they start under', () => {
    const text = `# Intro\n${'a'.repeat(60)}\n# Details\n${'b'.repeat(60)}`;
    const chunks = chunkText(text, { strategy: 'fixed', size: 50, overlap: 0 });
    expect(chunks[0].locator).toBe('Intro');
    expect(chunks.at(-1)!.locator).toBe('Details');
  });
});

describe('semantic', () => {
  const doc = [
    '# Handbook',
    '',
    'Welcome to the company handbook.',
    '',
    '## Vacation',
    '',
    'Employees get 25 days of paid vacation per year.',
    '',
    'Unused days carry over to the next year.',
    '',
    '## Remote work',
    '',
    'Remote work is allowed three days a week.',
  ].join('\n');

  it('splits on headings and records the heading path as locator', () => {
    const chunks = chunkText(doc, { strategy: 'semantic', size: 1200, overlap: 150 });
    expect(chunks.map((c) => c.locator)).toEqual(['Handbook', 'Handbook > Vacation', 'Handbook > Remote work']);
    expect(chunks[1].text).toBe('## Vacation\n\nEmployees get 25 days of paid vacation per year.\n\nUnused days carry over to the next year.');
    expect(chunks[2].text).toContain('three days a week');
  });

  it('a sibling heading replaces the previous one of its level; text before any heading has no locator', () => {
    const chunks = chunkText('Preface text.\n\n# A\n\nalpha\n\n### A3\n\ndeep\n\n# B\n\nbeta', { strategy: 'semantic', size: 500, overlap: 0 });
    expect(chunks.map((c) => c.locator)).toEqual([null, 'A', 'A > A3', 'B']);
  });

  it('packs paragraphs up to size and never exceeds it', () => {
    const paragraphs = Array.from({ length: 12 }, (_, i) => `Paragraph ${i} ${words(8)}.`);
    const chunks = chunkText(paragraphs.join('\n\n'), { strategy: 'semantic', size: 200, overlap: 0 });
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.every((c) => c.text.length <= 200)).toBe(true);
    // Paragraphs are kept whole and in order.
    expect(chunks.map((c) => c.text).join('\n\n')).toBe(paragraphs.join('\n\n'));
  });

  it('splits a long paragraph into sentences, then words', () => {
    const sentences = Array.from({ length: 10 }, (_, i) => `Sentence number ${i} says ${words(5, 'w')}.`);
    const chunks = chunkText(sentences.join(' '), { strategy: 'semantic', size: 120, overlap: 0 });
    expect(chunks.every((c) => c.text.length <= 120)).toBe(true);
    for (const chunk of chunks) expect(chunk.text).toMatch(/\.$/); // cut between sentences
    const long = chunkText(words(100), { strategy: 'semantic', size: 60, overlap: 0 });
    expect(long.every((c) => c.text.length <= 60)).toBe(true);
    expect(long.map((c) => c.text).join(' ')).toBe(words(100));
  });

  it('carries up to `overlap` characters of the previous chunk into the next, within a section', () => {
    const text = Array.from({ length: 10 }, (_, i) => `Point ${i} ${words(10, `p${i}x`)}.`).join('\n\n');
    const chunks = chunkText(text, { strategy: 'semantic', size: 250, overlap: 60 });
    expect(chunks.length).toBeGreaterThan(2);
    for (let i = 1; i < chunks.length; i++) {
      const carried = chunks[i].text.split(' Point ')[0];
      expect(carried.length).toBeLessThanOrEqual(60);
      expect(chunks[i - 1].text.endsWith(carried)).toBe(true);
      expect(chunks[i].text.length).toBeLessThanOrEqual(250);
    }
    // No overlap across a heading.
    const sections = chunkText(`# A\n\n${words(30)}\n\n# B\n\nbeta gamma`, { strategy: 'semantic', size: 100, overlap: 50 });
    expect(sections.at(-1)).toEqual({ text: '# B\n\nbeta gamma', locator: 'B' });
  });

  it('defaults to semantic 1200/150', () => {
    expect(DEFAULT_CHUNKING).toEqual({ strategy: 'semantic', size: 1200, overlap: 150 });
  });
});

describe('chunkDocument', () => {
  it('chunks page by page and names the page when no heading does', () => {
    const chunks = chunkDocument({ text: 'one\n\ntwo', pageTexts: ['First page text.', '# Terms\n\nSecond page text.'] }, DEFAULT_CHUNKING);
    expect(chunks).toEqual([
      { text: 'First page text.', locator: 'page 1' },
      { text: '# Terms\n\nSecond page text.', locator: 'Terms' },
    ]);
  });
});
