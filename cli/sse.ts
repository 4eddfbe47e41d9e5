// Server-Sent Events for the CLI: an incremental text/event-stream parser, and a POST whose answer
// is either a JSON envelope (a refusal) or an event stream, read event by event with an idle limit
// and Ctrl-C. Shared by `liya agents run` and `liya workflows run --stream`.
import { ApiError, UnreachableError } from './api-client.js';

// ---------------------------------------------------------------- the parser

export interface SseEvent {
  /** The `event:` field; `message` when the event has none. */
  event: string;
  /** The `data:` lines joined with line breaks. */
  data: string;
  /** The last `id:` seen so far. */
  id?: string;
}

/**
 * An incremental parser of the text/event-stream format (WHATWG HTML, "server-sent events"): text
 * goes in as it arrives, in pieces of any size (an event, a line or a CRLF may be split across
 * pieces), complete events come out. Comment lines (`: ping`) and `retry:` are skipped; an event
 * without data lines is not dispatched; an unfinished event at the end of the stream is dropped.
 */
export class SseParser {
  private buffer = '';
  private dataLines: string[] = [];
  private eventType = '';
  private lastId: string | undefined;

  /** Feeds decoded text; returns the events it completed. */
  push(text: string): SseEvent[] {
    this.buffer += text;
    const events: SseEvent[] = [];
    const buffer = this.buffer;
    let start = 0;
    for (let i = 0; i < buffer.length; i++) {
      const c = buffer[i];
      if (c !== '\n' && c !== '\r') continue;
      // A CR at the end may be the first half of a CRLF: wait for the next piece.
      if (c === '\r' && i === buffer.length - 1) break;
      const line = buffer.slice(start, i);
      if (c === '\r' && buffer[i + 1] === '\n') i++;
      start = i + 1;
      this.processLine(line, events);
    }
    this.buffer = buffer.slice(start);
    return events;
  }

  /** The stream ended: a pending line (a lone CR at the very end) is processed; an unfinished event is dropped. */
  end(): SseEvent[] {
    const events: SseEvent[] = [];
    if (this.buffer.endsWith('\r')) this.processLine(this.buffer.slice(0, -1), events);
    this.buffer = '';
    this.dataLines = [];
    this.eventType = '';
    return events;
  }

  private processLine(line: string, events: SseEvent[]): void {
    if (line === '') {
      if (this.dataLines.length) events.push({ event: this.eventType || 'message', data: this.dataLines.join('\n'), ...(this.lastId !== undefined ? { id: this.lastId } : {}) });
      this.dataLines = [];
      this.eventType = '';
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.dataLines.push(value);
    else if (field === 'event') this.eventType = value;
    else if (field === 'id' && !value.includes('\0')) this.lastId = value;
  }
}

/**
 * Decodes and parses a byte stream read through `reader` (a character may be split across chunks),
 * yielding events as they complete; `onChunk` is called for every chunk, comments included.
 */
export async function* readSse(reader: ReadableStreamDefaultReader<Uint8Array>, onChunk?: () => void): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder('utf-8');
  const parser = new SseParser();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    onChunk?.();
    yield* parser.push(decoder.decode(value, { stream: true }));
  }
  yield* parser.push(decoder.decode());
  yield* parser.end();
}

// ---------------------------------------------------------------- a POST answered with a stream

/** Ctrl-C: the request was aborted. */
export class StreamCancelled extends Error {
  constructor() {
    super('cancelled');
    this.name = 'StreamCancelled';
  }
}

/** The stream stayed silent too long. */
export class StreamIdle extends Error {
  constructor(readonly ms: number) {
    super(`no data within ${ms / 1000} s`);
    this.name = 'StreamIdle';
  }
}

export interface StreamTarget {
  baseUrl: string;
  /** Sent as a bearer token. */
  apiKey: string;
  /** How long the stream may stay silent (events and heartbeats both count). */
  idleMs: number;
}

/** An event whose data is JSON. */
export interface JsonEvent {
  event: string;
  data: unknown;
}

export interface StreamOutcome {
  /** The event that ended the stream (one `isFinal` accepted). */
  final?: JsonEvent;
  /** Why the stream ended without a final event. */
  interruption?: StreamCancelled | StreamIdle | Error;
}

/** Why fetch failed, from undici's `cause` (connection refused, DNS failure, ...). */
export function describeFetchError(err: unknown): string {
  const cause = err instanceof Error ? (err.cause as { code?: string; message?: string } | undefined) : undefined;
  if (cause?.message === 'bad port') return 'fetch refuses to connect to this port (a "bad port" in the Fetch standard)';
  if (cause?.message) return cause.message;
  if (cause?.code) return cause.code;
  return err instanceof Error ? err.message : String(err);
}

/** The error envelope of a refused request as an ApiError (as the API client reports it). */
export function envelopeError(status: number, text: string, path: string, baseUrl: string): ApiError {
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    return new ApiError(status, 'UNEXPECTED_RESPONSE', `POST ${path} answered HTTP ${status} with a body that is not JSON or an event stream; is ${baseUrl} a Liya server?`);
  }
  const error = ((parsed ?? {}) as { error?: { code?: string; message?: string; details?: Record<string, unknown> } }).error ?? {};
  return new ApiError(status, error.code ?? `HTTP_${status}`, error.message ?? `POST ${path} failed with HTTP ${status}`, error.details);
}

/**
 * POSTs `body` (JSON) to `path` and reads the answer as an event stream, calling `onEvent` for each
 * event whose data is JSON, until one `isFinal` accepts. A refusal before the stream (a JSON
 * envelope) throws ApiError, no answer at all UnreachableError; once the stream is open, its end is
 * described by the outcome. Ctrl-C aborts the request (a second one ends the process as usual).
 */
export async function postEventStream(
  target: StreamTarget,
  path: string,
  body: unknown,
  onEvent: (event: JsonEvent) => void,
  isFinal: (event: JsonEvent) => boolean,
): Promise<StreamOutcome> {
  const controller = new AbortController();
  const onSigint = () => controller.abort(new StreamCancelled());
  process.once('SIGINT', onSigint);
  let timer: NodeJS.Timeout | undefined;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => controller.abort(new StreamIdle(target.idleMs)), target.idleMs);
  };
  const reason = () => controller.signal.reason as Error;
  try {
    arm();
    let res: Response;
    try {
      res = await fetch(target.baseUrl + path, {
        method: 'POST',
        headers: { accept: 'text/event-stream', 'content-type': 'application/json', authorization: `Bearer ${target.apiKey}` },
        body: JSON.stringify(body),
        signal: controller.signal,
      });
    } catch (err) {
      if (controller.signal.aborted && reason() instanceof StreamCancelled) return { interruption: reason() };
      if (controller.signal.aborted) throw new UnreachableError(target.baseUrl, reason().message);
      throw new UnreachableError(target.baseUrl, describeFetchError(err));
    }
    const contentType = res.headers.get('content-type') ?? '';
    if (!res.ok || !contentType.startsWith('text/event-stream') || !res.body) {
      let text: string;
      try {
        text = await res.text();
      } catch (err) {
        if (controller.signal.aborted && reason() instanceof StreamCancelled) return { interruption: reason() };
        throw new UnreachableError(target.baseUrl, controller.signal.aborted ? reason().message : describeFetchError(err));
      }
      throw envelopeError(res.status, text, path, target.baseUrl);
    }

    const outcome: StreamOutcome = {};
    const reader = res.body.getReader();
    try {
      for await (const sse of readSse(reader, arm)) {
        let data: unknown;
        try {
          data = JSON.parse(sse.data);
        } catch {
          continue; // not JSON: not an event of these protocols
        }
        const event = { event: sse.event, data };
        onEvent(event);
        if (isFinal(event)) {
          outcome.final = event;
          break;
        }
      }
    } catch (err) {
      outcome.interruption = controller.signal.aborted ? reason() : new Error(`the connection broke: ${describeFetchError(err)}`);
    } finally {
      reader.cancel().catch(() => undefined);
    }
    if (!outcome.final && !outcome.interruption) outcome.interruption = new Error('the stream ended before the run finished');
    return outcome;
  } finally {
    clearTimeout(timer);
    process.off('SIGINT', onSigint);
  }
}

/** What to tell the user when a run's stream ended before the run reported its end. */
export function unfinishedStreamReport(key: string, interruption: Error | undefined, hints: string[]): { message: string; hints: string[] } {
  const why = interruption instanceof StreamIdle ? `the stream sent nothing for ${interruption.ms / 1000} s` : (interruption?.message ?? 'the stream ended early');
  return {
    message: `The run of ${key} did not report its end: ${why}`,
    hints: [...hints, ...(interruption instanceof StreamIdle ? ['Allow longer silences with --timeout <seconds>.'] : [])],
  };
}
