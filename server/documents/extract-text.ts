// Turns an upload's bytes into plain text. Headings are kept as Markdown heading lines (`# Title`),
// so the semantic chunker can split on them whatever the source format was.
// Formats read with a parser library (PDF, DOCX, HTML, CSV) are extracted in a separate process
// (parser-client.ts): once loaded, the parsers' code stays in a process for good (~15 MB for
// pdf.js and mammoth), and the parser process exits when idle, which gives it all back.
import type { FormatCallback } from 'html-to-text';
import { DOCX_MIME, type SupportedMediaType } from './media-types.js';
import { runInParserProcess, type ExtractedText } from './parser-client.js';

/** The file cannot be read as its type says: the ingestion job fails with this message (no retry). */
export class UnreadableDocumentError extends Error {
  override name = 'UnreadableDocumentError';
}

function decodeUtf8(bytes: Uint8Array): string {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch {
    throw new UnreadableDocumentError('The file is not valid UTF-8 text');
  }
  if (text.includes('\u0000')) throw new UnreadableDocumentError('The file contains binary data, not text');
  return text;
}

const normalize = (text: string) =>
  text
    .replace(/\r\n?/g, '\n')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();

// ------------------------------------------------------------------ HTML

const markdownHeading: FormatCallback = (elem, walk, builder) => {
  const level = Number(/^h([1-6])$/i.exec(elem.name ?? '')?.[1] ?? 1);
  builder.openBlock({ leadingLineBreaks: 2 });
  builder.addInline(`${'#'.repeat(level)} `);
  walk(elem.children, builder);
  builder.closeBlock({ trailingLineBreaks: 2 });
};

export async function htmlToPlainText(html: string): Promise<string> {
  const { convert: htmlToText } = await import('html-to-text');
  return htmlToText(html, {
    wordwrap: false,
    formatters: { markdownHeading },
    selectors: [
      ...['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, format: 'markdownHeading' })),
      { selector: 'a', options: { ignoreHref: true } },
      { selector: 'img', format: 'skip' },
      { selector: 'script', format: 'skip' },
      { selector: 'style', format: 'skip' },
      { selector: 'noscript', format: 'skip' },
      { selector: 'template', format: 'skip' },
    ],
  });
}

// ------------------------------------------------------------------ CSV and JSON

async function csvToText(text: string): Promise<string> {
  const { parse: parseCsv } = await import('csv-parse/sync');
  let records: Record<string, string>[];
  try {
    records = parseCsv(text, { columns: true, skip_empty_lines: true, relax_column_count: true, bom: true, trim: true });
  } catch (err) {
    throw new UnreadableDocumentError(`The file is not valid CSV: ${(err as Error).message}`);
  }
  return records
    .map((record) =>
      Object.entries(record)
        .filter(([, value]) => value !== undefined && value !== '')
        .map(([column, value]) => `${column}: ${value}`)
        .join('; '),
    )
    .filter((line) => line.length > 0)
    .join('\n');
}

function flattenJson(value: unknown, path: string, lines: string[]) {
  if (Array.isArray(value)) {
    value.forEach((item, i) => flattenJson(item, `${path}[${i}]`, lines));
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) flattenJson(item, path ? `${path}.${key}` : key, lines);
  } else if (value !== null && value !== '') {
    lines.push(path ? `${path}: ${String(value)}` : String(value));
  }
}

function jsonToText(text: string): string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UnreadableDocumentError(`The file is not valid JSON: ${(err as Error).message}`);
  }
  const lines: string[] = [];
  flattenJson(value, '', lines);
  return lines.join('\n');
}

// ------------------------------------------------------------------ PDF and DOCX

async function pdfToText(bytes: Uint8Array): Promise<ExtractedText> {
  const { extractText: extractPdfText, getDocumentProxy } = await import('unpdf');
  let pageTexts: string[];
  let pages: number;
  try {
    // pdf.js takes ownership of the buffer it is given: pass a copy. (unpdf's build of pdf.js has
    // no eval code path, so untrusted fonts cannot run code.)
    const pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
    const result = await extractPdfText(pdf, { mergePages: false });
    pages = result.totalPages;
    pageTexts = result.text.map(normalize);
    // Frees pdf.js's worker-side state (not in unpdf's declared type).
    await (pdf as unknown as { destroy?: () => Promise<void> }).destroy?.();
  } catch (err) {
    throw new UnreadableDocumentError(`The PDF file could not be read: ${(err as Error).message || 'unknown error'}`);
  }
  return { text: pageTexts.filter(Boolean).join('\n\n'), pages, pageTexts };
}

async function docxToText(bytes: Uint8Array): Promise<string> {
  const { default: mammoth } = await import('mammoth');
  let html: string;
  try {
    html = (await mammoth.convertToHtml({ buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) })).value;
  } catch (err) {
    throw new UnreadableDocumentError(`The DOCX file could not be read: ${(err as Error).message || 'unknown error'}`);
  }
  return htmlToPlainText(html);
}

/** The media types whose extraction loads a parser library, so runs in the parser process. */
const PARSED_ELSEWHERE: ReadonlySet<SupportedMediaType> = new Set(['application/pdf', DOCX_MIME, 'text/html', 'text/csv']);

/** Extracts the text of an upload; throws UnreadableDocumentError when the file cannot be read or holds no text. */
export async function extractText(bytes: Uint8Array, mediaType: SupportedMediaType): Promise<ExtractedText> {
  if (!PARSED_ELSEWHERE.has(mediaType)) return extractTextInProcess(bytes, mediaType);
  const reply = await runInParserProcess({ bytes, mediaType });
  if (reply.ok) return reply.extracted;
  throw reply.unreadable ? new UnreadableDocumentError(reply.message) : new Error(reply.message);
}

/** extractText in this process, whatever the format (the parser process runs this). */
export async function extractTextInProcess(bytes: Uint8Array, mediaType: SupportedMediaType): Promise<ExtractedText> {
  let extracted: ExtractedText;
  switch (mediaType) {
    case 'application/pdf':
      extracted = await pdfToText(bytes);
      break;
    case DOCX_MIME:
      extracted = { text: await docxToText(bytes), pages: null };
      break;
    case 'text/html':
      extracted = { text: await htmlToPlainText(decodeUtf8(bytes)), pages: null };
      break;
    case 'text/csv':
      extracted = { text: await csvToText(decodeUtf8(bytes)), pages: null };
      break;
    case 'application/json':
      extracted = { text: jsonToText(decodeUtf8(bytes)), pages: null };
      break;
    default:
      extracted = { text: decodeUtf8(bytes), pages: null };
  }
  const text = normalize(extracted.text);
  if (!text) throw new UnreadableDocumentError('No text could be extracted from the file');
  return { ...extracted, text };
}
