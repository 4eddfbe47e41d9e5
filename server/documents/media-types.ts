// Which uploads are accepted, and what each one is: the declared type (or the name's extension),
// checked against the bytes for the binary formats.
import { AppError, type ErrorCode } from '../errors.js';

export const DOCX_MIME = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

export const SUPPORTED_MEDIA_TYPES = [
  'text/plain',
  'text/markdown',
  'text/csv',
  'application/json',
  'text/html',
  'application/pdf',
  DOCX_MIME,
] as const;
export type SupportedMediaType = (typeof SUPPORTED_MEDIA_TYPES)[number];

/** Largest decoded upload: 25 MB. */
export const MAX_UPLOAD_BYTES = 25 * 1024 * 1024;
/** An upload request's body limit: a 25 MB file in base64 (4/3 of it) plus the rest of the JSON body. */
const UPLOAD_BODY_LIMIT = Math.ceil((MAX_UPLOAD_BYTES * 4) / 3) + 1024 * 1024;

/** What every upload route (API key and dashboard) answers and takes: 202, its refusals, room for a 25 MB file. */
export const UPLOAD_ROUTE = {
  successStatus: 202,
  errors: ['NOT_FOUND', 'UNSUPPORTED_MEDIA_TYPE', 'PAYLOAD_TOO_LARGE'] as ErrorCode[],
  bodyLimit: UPLOAD_BODY_LIMIT,
};

const BY_EXTENSION = {
  txt: 'text/plain',
  text: 'text/plain',
  log: 'text/plain',
  md: 'text/markdown',
  markdown: 'text/markdown',
  csv: 'text/csv',
  json: 'application/json',
  html: 'text/html',
  htm: 'text/html',
  pdf: 'application/pdf',
  docx: DOCX_MIME,
} as const satisfies Record<string, SupportedMediaType>;
/** The extensions an upload's type is inferred from (without the dot), each with its type: the CLI types its own table from it. */
export type MediaTypesByExtension = typeof BY_EXTENSION;

// Common alternative spellings of the supported types.
const ALIASES: Record<string, SupportedMediaType> = {
  'text/x-markdown': 'text/markdown',
  'application/csv': 'text/csv',
  'text/json': 'application/json',
  'application/xhtml+xml': 'text/html',
  'application/x-pdf': 'application/pdf',
};

const isSupported = (type: string): type is SupportedMediaType => (SUPPORTED_MEDIA_TYPES as readonly string[]).includes(type);

const startsWith = (bytes: Uint8Array, signature: number[]) => signature.every((b, i) => bytes[i] === b);
const PDF_MAGIC = [0x25, 0x50, 0x44, 0x46, 0x2d]; // %PDF-
const ZIP_MAGIC = [0x50, 0x4b, 0x03, 0x04]; // PK\3\4

function sniff(bytes: Uint8Array): 'pdf' | 'zip' | null {
  if (startsWith(bytes, PDF_MAGIC)) return 'pdf';
  if (startsWith(bytes, ZIP_MAGIC)) return 'zip';
  return null;
}

const unsupported = (message: string, details: Record<string, unknown>) =>
  new AppError('UNSUPPORTED_MEDIA_TYPE', message, { ...details, supported: [...SUPPORTED_MEDIA_TYPES] });

/**
 * The media type of an upload: `mimeType` when given (parameters such as `; charset=` dropped),
 * else inferred from the name's extension. 415 UNSUPPORTED_MEDIA_TYPE for anything else, and when
 * the bytes are a PDF or a ZIP (DOCX) but the type says otherwise, or the other way round.
 */
export function resolveMediaType(name: string, mimeType: string | undefined, bytes: Uint8Array): SupportedMediaType {
  let type: SupportedMediaType;
  if (mimeType !== undefined) {
    const bare = mimeType.split(';')[0].trim().toLowerCase();
    const known = isSupported(bare) ? bare : ALIASES[bare];
    if (!known) throw unsupported(`Documents of type "${bare}" are not supported`, { mime_type: bare });
    type = known;
  } else {
    const extension = /\.([A-Za-z0-9]+)$/.exec(name.trim())?.[1]?.toLowerCase();
    const inferred = extension ? (BY_EXTENSION as Readonly<Record<string, SupportedMediaType>>)[extension] : undefined;
    if (!inferred) {
      throw unsupported(
        extension ? `Files with the extension ".${extension}" are not supported: send mime_type or use a supported format` : 'The type of this file cannot be inferred from its name: send mime_type',
        { extension: extension ?? null },
      );
    }
    type = inferred;
  }
  const detected = sniff(bytes);
  const expected = type === 'application/pdf' ? 'pdf' : type === DOCX_MIME ? 'zip' : null;
  if (detected !== expected) {
    const what = detected === 'pdf' ? 'a PDF file' : detected === 'zip' ? 'a ZIP (DOCX) file' : 'neither a PDF nor a DOCX file';
    throw unsupported(`The content does not match the type "${type}": it is ${what}`, { mime_type: type, detected: detected ?? 'other' });
  }
  return type;
}
