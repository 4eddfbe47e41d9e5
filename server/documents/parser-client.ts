// The server's side of the document parser process: a Node child process started with the first
// file that needs a parser library and stopped after IDLE_EXIT_MS without one. Modules cannot be
// unloaded, and a worker thread's memory largely stays with the process after the thread ends
// (measured: +25 MB), so a process that exits is the only way an idle server holds none of pdf.js
// and mammoth. One parser process serves every extraction of this process; the file goes over
// IPC and the text comes back (structured clone).
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ExtractedText } from './extract-text.js';
import type { SupportedMediaType } from './media-types.js';

export interface ParseRequest {
  bytes: Uint8Array;
  mediaType: SupportedMediaType;
}

export type ParseReply = { ok: true; extracted: ExtractedText } | { ok: false; unreadable: boolean; message: string };

/** The parser process exits after this long without a file to read. */
const IDLE_EXIT_MS = 10_000;

interface ParserProcess {
  child: ChildProcess;
  pending: Map<number, { resolve: (reply: ParseReply) => void; reject: (err: Error) => void }>;
  idleTimer: NodeJS.Timeout | null;
}

let current: ParserProcess | null = null;
let nextId = 0;

/** parser-process.js next to this file when compiled; from the TypeScript sources, a bootstrap that registers the loader first. */
function entryPoint(): string {
  const typescript = new URL(import.meta.url).pathname.endsWith('.ts');
  return fileURLToPath(new URL(typescript ? './parser-process-ts.mjs' : './parser-process.js', import.meta.url));
}

function startParserProcess(): ParserProcess {
  // Not the server's Node flags: --inspect and the like would clash with the server's own.
  const child = fork(entryPoint(), [], { execArgv: [], serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const proc: ParserProcess = { child, pending: new Map(), idleTimer: null };
  child.on('message', ({ id, ...reply }: ParseReply & { id: number }) => {
    proc.pending.get(id)?.resolve(reply as ParseReply);
    proc.pending.delete(id);
    if (proc.pending.size === 0) markIdle(proc);
  });
  const fail = (err: Error) => {
    if (current === proc) current = null;
    if (proc.idleTimer) clearTimeout(proc.idleTimer);
    for (const task of proc.pending.values()) task.reject(err);
    proc.pending.clear();
  };
  child.on('error', (err) => {
    fail(new Error(`the document parser process failed: ${err.message}`));
    child.kill();
  });
  child.on('exit', (code, signal) => fail(new Error(`the document parser process exited (${signal ?? `code ${code}`})`)));
  return proc;
}

/** With no file in progress the process holds no reference to the event loop (it never delays an exit), and stops after IDLE_EXIT_MS. */
function markIdle(proc: ParserProcess) {
  proc.child.unref();
  proc.child.channel?.unref();
  proc.idleTimer = setTimeout(() => {
    if (current === proc) current = null;
    proc.child.kill();
  }, IDLE_EXIT_MS).unref();
}

/** Extracts one file in the parser process, starting it when none runs. */
export function runInParserProcess(request: ParseRequest): Promise<ParseReply> {
  const proc = (current ??= startParserProcess());
  if (proc.idleTimer) clearTimeout(proc.idleTimer);
  proc.idleTimer = null;
  proc.child.ref();
  proc.child.channel?.ref();
  const id = nextId++;
  return new Promise((resolve, reject) => {
    proc.pending.set(id, { resolve, reject });
    proc.child.send({ id, ...request }, (err) => {
      if (err) proc.child.emit('error', err);
    });
  });
}
