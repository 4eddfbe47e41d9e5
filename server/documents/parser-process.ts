// The document parser process (started by parser-client.ts): extracts each file it is sent and
// answers with the text, or with why the file cannot be read.
import { extractTextInProcess, UnreadableDocumentError } from './extract-text.js';
import type { ParseReply, ParseRequest } from './parser-client.js';

function describeFailure(err: unknown): ParseReply {
  return { ok: false, unreadable: err instanceof UnreadableDocumentError, message: err instanceof Error ? err.message : String(err) };
}

process.on('message', ({ id, bytes, mediaType }: ParseRequest & { id: number }) => {
  void extractTextInProcess(bytes, mediaType)
    .then((extracted): ParseReply => ({ ok: true, extracted }), describeFailure)
    .then((reply) => process.send?.({ id, ...reply }));
});

// The server is gone (it exited or crashed): there is no one left to read files for.
process.on('disconnect', () => process.exit(0));
