// The OCR process: reads the text of images with tesseract.js (English data from the
// @tesseract.js-data/eng package, nothing is downloaded), and takes the images out of scanned PDF
// pages with pdf.js. Both run in a child process started with the first image and stopped after
// IDLE_EXIT_MS without one, like the document parser process (parser-client.ts), and for the same
// reason: tesseract's WebAssembly heap and language data (~80 MB) run in a worker thread, and after
// that thread is terminated ~50 MB of it stays with the process (measured); a process that exits
// gives it all back. This one module is both sides: imported, it is the client; started as a
// process (`fork` of this file), it serves the requests.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { crc32, deflateSync } from 'node:zlib';
import { createChildProcessClient } from '../common/child-process-client.js';

export interface OcrImage {
  bytes: Uint8Array;
  mimeType: string;
}

/** The images drawn on one page of a PDF, each as a PNG file. */
export interface PageImages {
  /** 1-based page number. */
  page: number;
  images: Uint8Array[];
}

export interface PdfImages {
  pageCount: number;
  pages: PageImages[];
}

type OcrRequest =
  | { kind: 'recognize'; bytes: Uint8Array; mimeType: string }
  | { kind: 'pageImages'; bytes: Uint8Array; pages: number[] | null; maxPages: number };
type OcrReply = { ok: true; text?: string; images?: PdfImages } | { ok: false; message: string };

/** The OCR process exits after this long without an image to read. */
const IDLE_EXIT_MS = 10_000;
/** One image (or one PDF's page images) taking longer than this stops the OCR process: 60 s. */
const REQUEST_TIMEOUT_MS = 60_000;
/** Images smaller than this many pixels (icons, rules, logos) hold no text worth reading. */
const MIN_IMAGE_PIXELS = 100 * 100;
/** At most this many images are taken from one page (a scanned page is usually one). */
const MAX_IMAGES_PER_PAGE = 3;

const resolvePackage = createRequire(import.meta.url).resolve;
const thisFile = fileURLToPath(import.meta.url);

let installed: boolean | null = null;

/**
 * Whether tesseract.js and its English data are installed (checked once, without loading them): an
 * optional feature, which `npm ci --omit=peer` and the default Docker image leave out.
 */
export function isLocalOcrInstalled(): boolean {
  if (installed === null) {
    try {
      resolvePackage('tesseract.js');
      resolvePackage('@tesseract.js-data/eng');
      installed = true;
    } catch {
      installed = false;
    }
  }
  return installed;
}

// ------------------------------------------------------------------ client side

/** From the TypeScript sources (tests, run-ts) the child needs tsx's loader; compiled, it runs ocr.js as is. */
function childExecArgv(): string[] {
  if (!thisFile.endsWith('.ts')) return [];
  return ['--import', pathToFileURL(resolvePackage('tsx')).href];
}

const ocr = createChildProcessClient<OcrRequest, OcrReply>({
  name: 'OCR',
  entry: () => ({ path: thisFile, execArgv: childExecArgv() }),
  idleExitMs: IDLE_EXIT_MS,
  requestTimeoutMs: REQUEST_TIMEOUT_MS,
});
const send = (request: OcrRequest) => ocr.send(request);

/** The text tesseract reads in an image (PNG, JPEG, GIF, WebP; English). Rejects when the image cannot be read. */
export async function recognizeImageText(image: OcrImage): Promise<string> {
  const reply = await send({ kind: 'recognize', bytes: image.bytes, mimeType: image.mimeType });
  if (!reply.ok) throw new Error(reply.message);
  return reply.text ?? '';
}

/**
 * The images drawn on pages of a PDF, as PNG files: `pages` (1-based; null: every page), at most
 * `maxPages` of them, skipping images under 100×100 pixels and keeping at most 3 per page. Pages
 * without such an image are left out. Rejects when the PDF cannot be read.
 */
export async function extractPdfPageImages(bytes: Uint8Array, pages: number[] | null, maxPages: number): Promise<PdfImages> {
  const reply = await send({ kind: 'pageImages', bytes, pages, maxPages });
  if (!reply.ok) throw new Error(reply.message);
  return reply.images ?? { pageCount: 0, pages: [] };
}

/** Stops the OCR process now, if one runs (tests; shutdown). */
export function stopOcrProcess(): void {
  ocr.stop();
}

// ------------------------------------------------------------------ process side

type TesseractWorker = import('tesseract.js').Worker;
let tesseract: Promise<TesseractWorker> | null = null;

function startTesseract(): Promise<TesseractWorker> {
  return import('tesseract.js').then(async ({ default: Tesseract }) => {
    // 4.0.0_best_int: the LSTM-only integer model (3 MB), what the LSTM engine uses; the other
    // folder adds the legacy engine's data (11 MB). cacheMethod none: no copy written to the cwd.
    // errorHandler: without one, tesseract.js rethrows a failed job (an unreadable image) as an
    // uncaught exception besides rejecting its promise, which would end this process.
    const langPath = path.join(path.dirname(resolvePackage('@tesseract.js-data/eng')), '4.0.0_best_int');
    return Tesseract.createWorker('eng', Tesseract.OEM.LSTM_ONLY, { langPath, gzip: true, cacheMethod: 'none', errorHandler: () => {} });
  });
}

async function recognize(bytes: Uint8Array): Promise<string> {
  // A worker that failed to start is not kept: the next image tries again.
  tesseract ??= startTesseract().catch((err: unknown) => {
    tesseract = null;
    throw err;
  });
  const worker = await tesseract;
  const { data } = await worker.recognize(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
  return data.text;
}

// pdf.js image kinds (ImageKind) and operators (OPS).
const GRAYSCALE_1BPP = 1;
const RGBA_32BPP = 3;

interface PdfImageObject {
  width: number;
  height: number;
  kind: number;
  data?: Uint8Array | Uint8ClampedArray;
}

/** A PNG of pdf.js's decoded pixels: 1-bit grey (bit set = white, as in PNG), RGB or RGBA. */
function encodePng({ width, height, kind, data }: Required<PdfImageObject>): Uint8Array {
  const [colorType, bitDepth, rowBytes] = kind === GRAYSCALE_1BPP ? [0, 1, (width + 7) >> 3] : kind === RGBA_32BPP ? [6, 8, width * 4] : [2, 8, width * 3];
  const raw = Buffer.alloc((rowBytes + 1) * height);
  for (let y = 0; y < height; y++) raw.set(data.subarray(y * rowBytes, (y + 1) * rowBytes), y * (rowBytes + 1) + 1);
  const chunk = (type: string, body: Buffer) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(body.length, 0);
    head.write(type, 4, 'latin1');
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), body])), 0);
    return Buffer.concat([head, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([bitDepth, colorType, 0, 0, 0], 8);
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk('IHDR', header), chunk('IDAT', deflateSync(raw, { level: 3 })), chunk('IEND', Buffer.alloc(0))]);
}

async function extractImages(bytes: Uint8Array, wanted: number[] | null, maxPages: number): Promise<PdfImages> {
  const { getDocumentProxy, getResolvedPDFJS } = await import('unpdf');
  const { OPS } = await getResolvedPDFJS();
  const pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0 });
  try {
    const pageNumbers = (wanted ?? Array.from({ length: pdf.numPages }, (_, i) => i + 1)).filter((n) => n >= 1 && n <= pdf.numPages).slice(0, maxPages);
    const pages: PageImages[] = [];
    for (const pageNumber of pageNumbers) {
      const page = await pdf.getPage(pageNumber);
      const operators = await page.getOperatorList();
      const images: Uint8Array[] = [];
      for (let i = 0; i < operators.fnArray.length && images.length < MAX_IMAGES_PER_PAGE; i++) {
        const op = operators.fnArray[i];
        if (op !== OPS.paintImageXObject && op !== OPS.paintInlineImageXObject) continue;
        const arg = operators.argsArray[i][0] as string | PdfImageObject;
        // An XObject comes by name (page objects, or "g_" shared ones); an inline image comes as is.
        const image: PdfImageObject | undefined =
          typeof arg === 'string'
            ? await new Promise((resolve) => (arg.startsWith('g_') ? page.commonObjs : page.objs).get(arg, resolve as (value: unknown) => void))
            : arg;
        if (!image?.data || image.width * image.height < MIN_IMAGE_PIXELS) continue;
        images.push(encodePng(image as Required<PdfImageObject>));
      }
      if (images.length > 0) pages.push({ page: pageNumber, images });
      page.cleanup();
    }
    return { pageCount: pdf.numPages, pages };
  } finally {
    // Frees pdf.js's worker-side state (not in unpdf's declared type).
    await (pdf as unknown as { destroy?: () => Promise<void> }).destroy?.();
  }
}

async function serve(request: OcrRequest): Promise<OcrReply> {
  try {
    if (request.kind === 'recognize') return { ok: true, text: await recognize(request.bytes) };
    return { ok: true, images: await extractImages(request.bytes, request.pages, request.maxPages) };
  } catch (err) {
    // tesseract.js rejects with a string at times, not an Error.
    return { ok: false, message: err instanceof Error ? err.message : String(err) };
  }
}

const isOcrProcess = process.send !== undefined && process.argv[1] !== undefined && path.resolve(process.argv[1]) === thisFile;
if (isOcrProcess) {
  process.on('message', ({ id, ...request }: OcrRequest & { id: number }) => {
    void serve(request).then((reply) => process.send?.({ id, ...reply }));
  });
  // The server is gone (it exited or crashed): there is no one left to read images for.
  process.on('disconnect', () => process.exit(0));
}
