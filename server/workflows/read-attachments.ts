// Reads the files a workflow run is started with (`input.attachments`) before the run starts: each
// file entry is replaced by what was read from it, and the input gains the texts in the two shapes
// the steps' templates use. The file bytes are never kept. Documents go through the knowledge
// extractors (extract-text.ts), so a file reads the same here as when uploaded to a collection;
// images and PDF pages without a text layer are transcribed by a vision model or by local OCR
// (ocr.ts), when the tenant's plan allows it.
import { extractText, UnreadableDocumentError } from '../documents/extract-text.js';
import type { ExtractedText } from '../documents/parser-client.js';
import { DOCX_MIME, resolveMediaType, type SupportedMediaType } from '../documents/media-types.js';
import { AppError } from '../errors.js';
import { extractPdfPageImages, isLocalOcrInstalled, recognizeImageText, type PdfImages } from './ocr.js';

const MB = 1024 * 1024;
/** At most 10 files in one run's attachments. */
export const MAX_ATTACHMENTS = 10;
/** Largest decoded file: 15 MB. */
export const MAX_ATTACHMENT_BYTES = 15 * MB;
/** Largest decoded total of one run's files: 18 MB. */
export const MAX_ATTACHMENTS_TOTAL_BYTES = 18 * MB;
/**
 * Most text read from one run's files together, in characters: as many as 18 MB of plain text holds,
 * so any text files within the limits pass (PDF and DOCX text is rarely larger than the file). The
 * text is counted apart from the caller's JSON: run_input_bytes and run_state_bytes leave it out
 * (input-size.ts).
 */
export const MAX_ATTACHMENT_TEXT_CHARS = 18 * MB;
/** At most 20 pages of one PDF are transcribed; later pages without a text layer get a warning. */
export const MAX_TRANSCRIBED_PAGES = 20;
/** A PDF page with fewer non-blank characters than this has no real text layer (a page number at most): it may be a scan. */
const MIN_PAGE_TEXT_CHARS = 10;
/** What extractText says of a PDF without any text (extract-text.ts): for a PDF, that means scanned pages. */
const NO_TEXT_MESSAGE = 'No text could be extracted from the file';

export const ATTACHMENT_ERROR_STATUS = { UNSUPPORTED_ATTACHMENT: 400, ATTACHMENT_UNREADABLE: 422 } as const;
export type AttachmentErrorCode = keyof typeof ATTACHMENT_ERROR_STATUS;

/** A file of a type that is not supported (400), or that cannot be read (422). */
export class AttachmentError extends Error {
  override name = 'AttachmentError';
  readonly status: number;
  constructor(
    readonly code: AttachmentErrorCode,
    message: string,
    readonly details: Record<string, unknown>,
  ) {
    super(message);
    this.status = ATTACHMENT_ERROR_STATUS[code];
  }
}

export interface AttachmentReadOptions {
  /** The tenant's plan allows transcription of images/scans (plans starter, pro, enterprise; not free or trial). */
  transcriptionAllowed: boolean;
  /** Transcribe with a vision model when configured; null when no vision model is configured. */
  transcribeWithModel: ((image: { bytes: Uint8Array; mimeType: string; fileName: string }) => Promise<string>) | null;
  /** Local OCR fallback (default: tesseract.js with @tesseract.js-data/eng, when installed; null: none). */
  ocr?: ((image: { bytes: Uint8Array; mimeType: string }) => Promise<string>) | null;
}

export type AttachmentFormat = 'text' | 'markdown' | 'csv' | 'json' | 'html' | 'pdf' | 'docx' | 'image';

/** What replaces a file entry in `attachments` once read. */
export interface ReadAttachment {
  file_name: string;
  format: AttachmentFormat;
  /** The PDF's page count; null for every other format. */
  pages: number | null;
  text: string;
  warnings: string[];
}

/** An entry of `attachments` that is a file: an object with a string `file_name` and a string `file_base64` (other keys are ignored). */
export interface FileAttachment {
  file_name: string;
  file_base64: string;
}

export function isFileAttachment(entry: unknown): entry is FileAttachment {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return false;
  const { file_name: name, file_base64: base64 } = entry as Record<string, unknown>;
  return typeof name === 'string' && typeof base64 === 'string';
}

const FORMAT_OF: Record<SupportedMediaType, AttachmentFormat> = {
  'text/plain': 'text',
  'text/markdown': 'markdown',
  'text/csv': 'csv',
  'application/json': 'json',
  'text/html': 'html',
  'application/pdf': 'pdf',
  [DOCX_MIME]: 'docx',
};
const SUPPORTED = ['.txt', '.md', '.csv', '.json', '.html', '.pdf', '.docx', 'PNG, JPEG, GIF and WebP images'];

/** A file entry checked against the limits, not decoded yet. */
interface PendingFile {
  index: number;
  name: string;
  base64: string;
}

const fileDetails = (file: PendingFile) => ({ file_name: file.name, attachment_index: file.index });

const unreadable = (file: PendingFile, reason: string, details: Record<string, unknown> = {}) =>
  new AttachmentError('ATTACHMENT_UNREADABLE', `Attachment "${file.name}": ${reason}`, { ...fileDetails(file), ...details });

// ------------------------------------------------------------------ limits and base64

/** The base64 text of an entry: an optional `data:...;base64,` prefix and line breaks dropped; 422 when it is not base64. */
function cleanBase64(file: PendingFile): string {
  const prefix = /^data:[^,]{0,200};base64,/i.exec(file.base64.slice(0, 256));
  const base64 = (prefix ? file.base64.slice(prefix[0].length) : file.base64).replace(/\s+/g, '');
  // Node's decoder skips whatever is not base64 instead of failing: check first. Both alphabets
  // (standard and URL-safe) are accepted, padded or not.
  const valid = /^[A-Za-z0-9+/_-]*={0,2}$/.test(base64) && base64.length % 4 !== 1 && (!base64.endsWith('=') || base64.length % 4 === 0);
  if (!valid) throw unreadable(file, 'file_base64 is not valid base64');
  return base64;
}

const decodedSize = (base64: string) => Math.floor((base64.length * 3) / 4) - (base64.endsWith('==') ? 2 : base64.endsWith('=') ? 1 : 0);

/** The file entries of `attachments`, checked against the limits before any is decoded: 413 PAYLOAD_TOO_LARGE, 422 for invalid base64. */
function checkAttachments(attachments: unknown[]): PendingFile[] {
  const files = attachments.flatMap((entry, index) => (isFileAttachment(entry) ? [{ index, name: entry.file_name, base64: entry.file_base64 }] : []));
  if (files.length > MAX_ATTACHMENTS) {
    const extra = files[MAX_ATTACHMENTS];
    throw new AppError('PAYLOAD_TOO_LARGE', `A run takes at most ${MAX_ATTACHMENTS} attached files: ${files.length} were sent ("${extra.name}" is file ${MAX_ATTACHMENTS + 1})`, {
      ...fileDetails(extra),
      count: files.length,
      limit: MAX_ATTACHMENTS,
    });
  }
  let total = 0;
  return files.map((file) => {
    const base64 = cleanBase64(file);
    const size = decodedSize(base64);
    if (size > MAX_ATTACHMENT_BYTES) {
      throw new AppError('PAYLOAD_TOO_LARGE', `Attachment "${file.name}" is ${size} bytes, over the limit of ${MAX_ATTACHMENT_BYTES / MB} MB (${MAX_ATTACHMENT_BYTES} bytes) per file`, {
        ...fileDetails(file),
        size_bytes: size,
        limit_bytes: MAX_ATTACHMENT_BYTES,
      });
    }
    total += size;
    if (total > MAX_ATTACHMENTS_TOTAL_BYTES) {
      throw new AppError('PAYLOAD_TOO_LARGE', `The attached files are over the limit of ${MAX_ATTACHMENTS_TOTAL_BYTES / MB} MB (${MAX_ATTACHMENTS_TOTAL_BYTES} bytes) in total: ${total} bytes up to "${file.name}"`, {
        ...fileDetails(file),
        total_bytes: total,
        limit_bytes: MAX_ATTACHMENTS_TOTAL_BYTES,
      });
    }
    return { ...file, base64 };
  });
}

// ------------------------------------------------------------------ file types

const startsWith = (bytes: Uint8Array, signature: number[], offset = 0) => signature.every((b, i) => bytes[offset + i] === b);
const ascii = (text: string) => [...text].map((c) => c.charCodeAt(0));

/** The image type told by the file's first bytes (PNG, JPEG, GIF, WebP), whatever its name says; null for anything else. */
function sniffImage(bytes: Uint8Array): string | null {
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (startsWith(bytes, ascii('GIF87a')) || startsWith(bytes, ascii('GIF89a'))) return 'image/gif';
  if (startsWith(bytes, ascii('RIFF')) && startsWith(bytes, ascii('WEBP'), 8)) return 'image/webp';
  return null;
}

type AttachmentType = { kind: 'image'; mimeType: string } | { kind: 'document'; mediaType: SupportedMediaType };

/** An image or a PDF by its bytes, else a document by its name's extension checked against its bytes (media-types.ts). */
function resolveAttachmentType(file: PendingFile, bytes: Uint8Array): AttachmentType {
  const image = sniffImage(bytes);
  if (image) return { kind: 'image', mimeType: image };
  // A PDF whose name does not say so (no extension, or another one) is still a PDF.
  if (startsWith(bytes, ascii('%PDF-'))) return { kind: 'document', mediaType: 'application/pdf' };
  try {
    return { kind: 'document', mediaType: resolveMediaType(file.name, undefined, bytes) };
  } catch (err) {
    if (!(err instanceof AppError && err.code === 'UNSUPPORTED_MEDIA_TYPE')) throw err;
    const { detected, mime_type: declared } = err.details ?? {};
    // Named .pdf or .docx but not one inside: a damaged file rather than an unsupported type.
    if (declared === 'application/pdf' || declared === DOCX_MIME) throw unreadable(file, `the file is not a valid ${FORMAT_OF[declared].toUpperCase()} file`);
    const reason = detected === 'zip' ? 'a ZIP archive is not a supported type' : 'the type is not supported (it is told by the name\'s extension)';
    throw new AttachmentError('UNSUPPORTED_ATTACHMENT', `Attachment "${file.name}": ${reason}; supported: ${SUPPORTED.join(', ')}`, {
      ...fileDetails(file),
      supported: SUPPORTED,
    });
  }
}

// ------------------------------------------------------------------ transcription

type TranscribeImage = { bytes: Uint8Array; mimeType: string; fileName: string };
type Transcription =
  | { available: true; method: 'model' | 'ocr'; transcribe: (image: TranscribeImage) => Promise<string> }
  | { available: false; reason: 'transcription_not_allowed' | 'transcription_not_configured'; message: string };

/** A vision model when allowed and configured; else local OCR when allowed and available; else why not. */
function chooseTranscription(options: AttachmentReadOptions): Transcription {
  if (!options.transcriptionAllowed) {
    return { available: false, reason: 'transcription_not_allowed', message: 'transcribing images and scanned pages is not available on this plan' };
  }
  if (options.transcribeWithModel) return { available: true, method: 'model', transcribe: options.transcribeWithModel };
  const ocr = options.ocr === undefined ? (isLocalOcrInstalled() ? recognizeImageText : null) : options.ocr;
  if (ocr) return { available: true, method: 'ocr', transcribe: ({ bytes, mimeType }) => ocr({ bytes, mimeType }) };
  return {
    available: false,
    reason: 'transcription_not_configured',
    message: 'transcribing images and scanned pages is not configured (no vision model is set up and local OCR is not installed)',
  };
}

const normalize = (text: string) =>
  text
    .replace(/\r\n?/g, '\n')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();

/** A model's failure (provider error, budget) is the caller's to report as it is; OCR that cannot read the image is a 422. */
async function transcribe(file: PendingFile, transcription: Transcription & { available: true }, image: TranscribeImage, what: string): Promise<string> {
  if (transcription.method === 'model') return normalize(await transcription.transcribe(image));
  try {
    return normalize(await transcription.transcribe(image));
  } catch (err) {
    throw unreadable(file, `OCR could not read ${what}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

const byWhom = (method: 'model' | 'ocr') => (method === 'model' ? 'transcribed by a vision model' : 'read by OCR');

/** "Page 3 has" or "Pages 2, 3 have" (at most 10 numbers named). */
function pagesHave(pages: number[]): string {
  if (pages.length === 1) return `Page ${pages[0]} has`;
  const named = pages.slice(0, 10).join(', ');
  return `Pages ${pages.length > 10 ? `${named} and ${pages.length - 10} more` : named} have`;
}

// ------------------------------------------------------------------ reading

async function readImage(file: PendingFile, bytes: Uint8Array, mimeType: string, transcription: Transcription): Promise<ReadAttachment> {
  if (!transcription.available) throw unreadable(file, `the file is an image, and ${transcription.message}`, { reason: transcription.reason });
  const text = await transcribe(file, transcription, { bytes, mimeType, fileName: file.name }, 'the image');
  const warnings = [`The text was ${byWhom(transcription.method)} from the image and may contain errors`];
  if (!text) warnings.push('No text was found in the image');
  return { file_name: file.name, format: 'image', pages: null, text, warnings };
}

/** A PDF's text layer; its pages without one (nearly empty: scans, or blank pages) are transcribed from the images drawn on them. */
async function readPdf(file: PendingFile, bytes: Uint8Array, transcription: Transcription): Promise<ReadAttachment> {
  let extracted: ExtractedText | null = null;
  try {
    extracted = await extractText(bytes, 'application/pdf');
  } catch (err) {
    if (!(err instanceof UnreadableDocumentError)) throw err;
    // No text at all in a readable PDF: every page may be a scan. Anything else is a damaged file.
    if (err.message !== NO_TEXT_MESSAGE) throw unreadable(file, err.message);
  }
  const pageTexts = extracted?.pageTexts ?? null;
  // null: every page (the extractor gives no page count for a PDF without text).
  const scanned = pageTexts ? pageTexts.flatMap((text, i) => (text.replace(/\s/g, '').length < MIN_PAGE_TEXT_CHARS ? [i + 1] : [])) : null;
  const result = (text: string, pages: number | null, warnings: string[]): ReadAttachment => ({ file_name: file.name, format: 'pdf', pages, text, warnings });
  if (extracted && scanned?.length === 0) return result(extracted.text, extracted.pages, []);
  if (!transcription.available) {
    if (!extracted || !scanned) throw unreadable(file, `the PDF has no text layer (it may be scanned), and ${transcription.message}`, { reason: transcription.reason });
    return result(extracted.text, extracted.pages, [`${pagesHave(scanned)} no text layer and ${scanned.length === 1 ? 'was' : 'were'} not transcribed: ${transcription.message}`]);
  }

  let images: PdfImages;
  try {
    images = await extractPdfPageImages(bytes, scanned, MAX_TRANSCRIBED_PAGES);
  } catch (err) {
    throw unreadable(file, `the images of the PDF's pages could not be read: ${err instanceof Error ? err.message : String(err)}`);
  }
  const pageCount = extracted?.pages ?? images.pageCount;
  if (!extracted && images.pages.length === 0) throw unreadable(file, `${NO_TEXT_MESSAGE}: the PDF has neither a text layer nor images to transcribe`);

  const texts = pageTexts ? [...pageTexts] : Array.from({ length: pageCount }, () => '');
  for (const { page, images: pageImages } of images.pages) {
    const parts: string[] = [];
    for (const [i, image] of pageImages.entries()) {
      const fileName = `${file.name} (page ${page}${pageImages.length > 1 ? `, image ${i + 1}` : ''})`;
      parts.push(await transcribe(file, transcription, { bytes: image, mimeType: 'image/png', fileName }, `page ${page}`));
    }
    texts[page - 1] = [texts[page - 1], ...parts].filter(Boolean).join('\n\n');
  }

  const warnings: string[] = [];
  if (images.pages.length > 0) {
    warnings.push(`${pagesHave(images.pages.map((p) => p.page))} no text layer: the text was ${byWhom(transcription.method)} and may contain errors`);
  }
  const candidates = scanned ?? Array.from({ length: pageCount }, (_, i) => i + 1);
  if (candidates.length > MAX_TRANSCRIBED_PAGES) {
    warnings.push(`Only the first ${MAX_TRANSCRIBED_PAGES} pages without a text layer were transcribed: ${pagesHave(candidates.slice(MAX_TRANSCRIBED_PAGES))} no text`);
  }
  const text = texts.filter(Boolean).join('\n\n');
  if (!text) warnings.push('No text was found in the scanned pages');
  return result(text, pageCount, warnings);
}

async function readAttachment(file: PendingFile, transcription: Transcription): Promise<ReadAttachment> {
  const bytes = Buffer.from(file.base64, 'base64');
  if (bytes.length === 0) throw unreadable(file, 'the file is empty');
  const type = resolveAttachmentType(file, bytes);
  if (type.kind === 'image') return readImage(file, bytes, type.mimeType, transcription);
  if (type.mediaType === 'application/pdf') return readPdf(file, bytes, transcription);
  try {
    const { text } = await extractText(bytes, type.mediaType);
    return { file_name: file.name, format: FORMAT_OF[type.mediaType], pages: null, text, warnings: [] };
  } catch (err) {
    // The parser process failing (not the file) stays a server error.
    if (err instanceof UnreadableDocumentError) throw unreadable(file, err.message);
    throw err;
  }
}

/** A heading line cannot be broken by the name: line breaks and other control characters become spaces. */
const headingName = (name: string) => name.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();

/**
 * Reads the files of `input.attachments` and returns the new input (the argument is not changed).
 * Each file entry ({file_name, file_base64}) is replaced by a ReadAttachment; other entries stay
 * as they are and add no text. The input gains `attachment_texts` (one string per file, in order)
 * and `attachments_text` (each file under `## File: <name>`, joined by blank lines), replacing any
 * given; both are added whenever `attachments` is an array, even one without files ([] and '').
 * An input whose `attachments` is not an array is returned as it is.
 *
 * Throws AppError PAYLOAD_TOO_LARGE (413: over 10 files, a file over 15 MB or a total over 18 MB
 * decoded, or more text than MAX_ATTACHMENT_TEXT_CHARS), AttachmentError UNSUPPORTED_ATTACHMENT
 * (400) and ATTACHMENT_UNREADABLE (422: invalid base64, an empty or damaged file, a document
 * without text, an image or scanned PDF that cannot be transcribed); a vision model's own errors
 * are passed on as they are.
 */
export async function readAttachments(input: Record<string, unknown>, options: AttachmentReadOptions): Promise<Record<string, unknown>> {
  const attachments = input.attachments;
  if (!Array.isArray(attachments)) return input;
  const files = checkAttachments(attachments);
  const transcription = chooseTranscription(options);
  const entries: unknown[] = [...attachments];
  const texts: string[] = [];
  const sections: string[] = [];
  let textChars = 0;
  // One file at a time: at most one decoded file is held, and the parser and OCR processes get one request at a time.
  for (const file of files) {
    const read = await readAttachment(file, transcription);
    textChars += read.text.length;
    if (textChars > MAX_ATTACHMENT_TEXT_CHARS) {
      throw new AppError('PAYLOAD_TOO_LARGE', `The text read from the attached files is over the limit of ${MAX_ATTACHMENT_TEXT_CHARS} characters in total: ${textChars} up to "${file.name}"`, {
        ...fileDetails(file),
        limit: 'attachment_text_chars',
        max: MAX_ATTACHMENT_TEXT_CHARS,
        text_chars: textChars,
      });
    }
    entries[file.index] = read;
    texts.push(read.text);
    sections.push(read.text ? `## File: ${headingName(file.name)}\n\n${read.text}` : `## File: ${headingName(file.name)}`);
  }
  return { ...input, attachments: entries, attachment_texts: texts, attachments_text: sections.join('\n\n') };
}
