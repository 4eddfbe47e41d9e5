// The server's side of the document parser process (common/child-process-client.ts): started with
// the first file that needs a parser library, stopped after IDLE_EXIT_MS without one, so an idle
// server holds none of pdf.js and mammoth (a worker thread would leave +25 MB behind, measured).
import { fileURLToPath } from 'node:url';
import { createChildProcessClient } from '../common/child-process-client.js';
import type { SupportedMediaType } from './media-types.js';

export interface ParseRequest {
  bytes: Uint8Array;
  mediaType: SupportedMediaType;
}

/** A document's text as the parser read it. */
export interface ExtractedText {
  text: string;
  /** Page count (PDF only). */
  pages: number | null;
  /** Each page's text (PDF only), so chunks can name their page. */
  pageTexts?: string[];
}

export type ParseReply = { ok: true; extracted: ExtractedText } | { ok: false; unreadable: boolean; message: string };

/** The parser process exits after this long without a file to read. */
const IDLE_EXIT_MS = 10_000;

/** parser-process.js next to this file when compiled; from the TypeScript sources, a bootstrap that registers the loader first. */
function entryPoint(): string {
  const typescript = new URL(import.meta.url).pathname.endsWith('.ts');
  return fileURLToPath(new URL(typescript ? './parser-process-ts.mjs' : './parser-process.js', import.meta.url));
}

const parser = createChildProcessClient<ParseRequest, ParseReply>({
  name: 'document parser',
  entry: () => ({ path: entryPoint(), execArgv: [] }),
  idleExitMs: IDLE_EXIT_MS,
});

/** Extracts one file in the parser process, starting it when none runs. */
export function runInParserProcess(request: ParseRequest): Promise<ParseReply> {
  return parser.send(request);
}
