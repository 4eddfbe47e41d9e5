// Splits extracted text into retrievable chunks: fixed windows, sliding (overlapping) windows, or
// semantic pieces that follow the text's structure (headings, paragraphs, sentences).

export const CHUNKING_STRATEGY_NAMES = ['fixed', 'sliding_window', 'semantic'] as const;
export type ChunkingStrategy = (typeof CHUNKING_STRATEGY_NAMES)[number];

export interface ChunkingOptions {
  strategy: ChunkingStrategy;
  /** Largest chunk, in characters. */
  size: number;
  /** Characters repeated from the previous chunk (sliding_window, semantic); below `size`. */
  overlap: number;
}

export interface TextChunk {
  text: string;
  /** Heading path (`Guide > Install`) or page (`page 2`) the chunk came from, when known. */
  locator: string | null;
}

/** Used when neither the upload nor its first collection says otherwise. */
export const DEFAULT_CHUNKING: ChunkingOptions = { strategy: 'semantic', size: 1200, overlap: 150 };

const MAX_LOCATOR = 500;
const HEADING = /^(#{1,6})[ \t]+(.+?)[ \t#]*$/;

// Never cut between the two halves of a surrogate pair.
function safeCut(text: string, position: number): number {
  if (position <= 0 || position >= text.length) return Math.max(0, Math.min(position, text.length));
  const code = text.charCodeAt(position - 1);
  return code >= 0xd800 && code <= 0xdbff ? position - 1 : position;
}

const clampOverlap = (options: ChunkingOptions) => Math.max(0, Math.min(options.overlap, options.size - 1));

interface Heading {
  offset: number;
  path: string;
}

/** Every Markdown heading line with its offset and heading path (`H1 > H2`). */
function findHeadings(text: string): Heading[] {
  const headings: Heading[] = [];
  const stack: { level: number; title: string }[] = [];
  let offset = 0;
  for (const line of text.split('\n')) {
    const match = HEADING.exec(line);
    if (match) {
      const level = match[1].length;
      while (stack.length && stack[stack.length - 1].level >= level) stack.pop();
      stack.push({ level, title: match[2].trim() });
      headings.push({ offset, path: stack.map((h) => h.title).join(' > ').slice(0, MAX_LOCATOR) });
    }
    offset += line.length + 1;
  }
  return headings;
}

function locatorAt(headings: Heading[], offset: number, fallback: string | null): string | null {
  let found: string | null = null;
  for (const heading of headings) {
    if (heading.offset > offset) break;
    found = heading.path;
  }
  return found ?? fallback;
}

/** Windows of `size` characters that start every `step` characters, until the text is covered. */
function windows(text: string, size: number, step: number, baseLocator: string | null): TextChunk[] {
  const headings = findHeadings(text);
  const chunks: TextChunk[] = [];
  let start = 0;
  while (start < text.length) {
    const end = safeCut(text, Math.min(start + size, text.length));
    const piece = text.slice(start, end > start ? end : start + size);
    if (piece.trim()) chunks.push({ text: piece, locator: locatorAt(headings, start, baseLocator) });
    if (start + piece.length >= text.length) break;
    start = safeCut(text, start + step) || start + step;
  }
  return chunks;
}

// ------------------------------------------------------------------ semantic

interface Piece {
  text: string;
  /** Starts a new paragraph (joined with a blank line) rather than continuing one (a space). */
  paragraph: boolean;
}

/** Splits a too-long text into pieces of at most `size`: sentences, then words, then characters. */
function splitLong(text: string, size: number): string[] {
  if (text.length <= size) return [text];
  const sentences = text.split(/(?<=[.!?;:])\s+/).filter(Boolean);
  if (sentences.length > 1) return sentences.flatMap((s) => splitLong(s, size));
  const words = text.split(/\s+/).filter(Boolean);
  if (words.length > 1) {
    const out: string[] = [];
    let current = '';
    for (const word of words) {
      if (word.length > size) {
        if (current) out.push(current);
        current = '';
        out.push(...splitLong(word, size));
      } else if (!current) {
        current = word;
      } else if (current.length + 1 + word.length <= size) {
        current += ` ${word}`;
      } else {
        out.push(current);
        current = word;
      }
    }
    if (current) out.push(current);
    return out;
  }
  const out: string[] = [];
  for (let start = 0; start < text.length; ) {
    const end = safeCut(text, start + size) || start + size;
    out.push(text.slice(start, end));
    start = end;
  }
  return out;
}

/** The end of `text`, at most `overlap` characters, starting at a word boundary. */
function tail(text: string, overlap: number): string {
  if (overlap <= 0) return '';
  if (text.length <= overlap) return text;
  const cut = text.slice(text.length - overlap);
  const space = cut.search(/\s/);
  return space === -1 ? '' : cut.slice(space).trim();
}

function packSection(body: string, options: ChunkingOptions, overlap: number): string[] {
  const pieces: Piece[] = [];
  for (const paragraph of body.split(/\n[ \t]*\n/)) {
    const trimmed = paragraph.trim();
    if (!trimmed) continue;
    splitLong(trimmed, options.size).forEach((text, i) => pieces.push({ text, paragraph: i === 0 }));
  }
  const chunks: string[] = [];
  let current = '';
  for (const piece of pieces) {
    const joiner = piece.paragraph ? '\n\n' : ' ';
    if (!current) {
      current = piece.text;
    } else if (current.length + joiner.length + piece.text.length <= options.size) {
      current += joiner + piece.text;
    } else {
      chunks.push(current);
      const carried = tail(current, overlap);
      current = carried && carried.length + 1 + piece.text.length <= options.size ? `${carried} ${piece.text}` : piece.text;
    }
  }
  if (current) chunks.push(current);
  return chunks;
}

/** Sections start at heading lines; chunks never span two sections and carry the heading path. */
function semantic(text: string, options: ChunkingOptions, baseLocator: string | null): TextChunk[] {
  const headings = findHeadings(text);
  const bounds = [0, ...headings.map((h) => h.offset).filter((o) => o > 0), text.length];
  const chunks: TextChunk[] = [];
  const overlap = clampOverlap(options);
  for (let i = 0; i < bounds.length - 1; i++) {
    const body = text.slice(bounds[i], bounds[i + 1]);
    const locator = locatorAt(headings, bounds[i], baseLocator);
    for (const piece of packSection(body, options, overlap)) chunks.push({ text: piece, locator });
  }
  return chunks;
}

/** Chunks `text`; `baseLocator` (e.g. `page 3`) names chunks that no heading names. */
export function chunkText(text: string, options: ChunkingOptions, baseLocator: string | null = null): TextChunk[] {
  if (!text.trim()) return [];
  const size = Math.max(1, Math.floor(options.size));
  switch (options.strategy) {
    case 'fixed':
      return windows(text, size, size, baseLocator);
    case 'sliding_window':
      return windows(text, size, size - clampOverlap({ ...options, size }), baseLocator);
    default:
      return semantic(text, { ...options, size }, baseLocator);
  }
}

/** Chunks a document: page by page when pages are known (each chunk names its page). */
export function chunkDocument(extracted: { text: string; pageTexts?: string[] }, options: ChunkingOptions): TextChunk[] {
  if (!extracted.pageTexts) return chunkText(extracted.text, options);
  return extracted.pageTexts.flatMap((page, i) => chunkText(page, options, `page ${i + 1}`));
}
