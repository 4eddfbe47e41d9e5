// Response bodies handed out by the outbound client's fetch, capped: past the byte limit (for an
// event stream, past it in one event) the reader gets the bytes up to the limit, then an error,
// and the connection is closed; nothing is read ahead of the reader.
import type { Readable } from 'node:stream';

/** A response body went past a limit: code 'OUTBOUND_LIMIT'; `limit` says which. */
export class OutboundLimitError extends Error {
  readonly code = 'OUTBOUND_LIMIT';
  constructor(
    readonly limit: 'body_bytes' | 'event_bytes' | 'stream_time',
    message: string,
  ) {
    super(message);
    this.name = 'OutboundLimitError';
  }
}

export interface BodyLimit {
  /** host[:port], for the message. */
  host: string;
  maxBytes: number;
  /** Non-zero for an event stream: the cap applies to each event instead of the whole body. */
  maxEventBytes: number;
}

// Pull-based, so nothing is read ahead of the reader; past the limit the reader gets the bytes up to
// it, then the error (so readLimited can still cut at the same size), and the connection is closed.
export function limitedBody(source: Readable, limit: BodyLimit): ReadableStream<Uint8Array> {
  const chunks = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const measure = limit.maxEventBytes ? createEventMeter(limit.maxEventBytes) : createByteMeter(limit.maxBytes);
  const what = limit.maxEventBytes ? `event-stream event exceeded ${limit.maxEventBytes} bytes` : `response body exceeded ${limit.maxBytes} bytes`;
  let overflow: OutboundLimitError | null = null;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (overflow) return controller.error(overflow);
        const { value, done } = await chunks.next();
        if (done) return controller.close();
        const within = measure(value);
        if (within === value.length) return controller.enqueue(value);
        overflow = new OutboundLimitError(limit.maxEventBytes ? 'event_bytes' : 'body_bytes', `Outbound response from ${limit.host} cut off: ${what}`);
        source.destroy();
        if (within > 0) controller.enqueue(value.subarray(0, within));
        else controller.error(overflow);
      },
      async cancel() {
        source.destroy();
      },
    },
    { highWaterMark: 0 },
  );
}

/** Counts a body's bytes: answers how many of `chunk` fit under `max`. */
function createByteMeter(max: number): (chunk: Uint8Array) => number {
  let total = 0;
  return (chunk) => {
    const room = max - total;
    total += Math.min(chunk.length, Math.max(room, 0));
    return chunk.length <= room ? chunk.length : Math.max(room, 0);
  };
}

/**
 * Counts the bytes of the Server-Sent Event in progress (an event ends at a blank line; lines end in
 * CRLF, LF or CR, possibly split across chunks): answers how many of `chunk` fit under `max`.
 */
function createEventMeter(max: number): (chunk: Uint8Array) => number {
  let eventBytes = 0;
  let lineEmpty = true;
  let afterCR = false;
  return (chunk) => {
    let at = 0;
    let nextLF = -2;
    let nextCR = -2;
    while (at < chunk.length) {
      // Each search runs once per line end found, never over the same bytes again.
      if (nextLF !== -1 && nextLF < at) nextLF = chunk.indexOf(10, at);
      if (nextCR !== -1 && nextCR < at) nextCR = chunk.indexOf(13, at);
      const end = nextLF === -1 ? nextCR : nextCR === -1 ? nextLF : Math.min(nextLF, nextCR);
      const stop = end === -1 ? chunk.length : end;
      if (stop > at) {
        if (eventBytes + (stop - at) > max) return at + (max - eventBytes);
        eventBytes += stop - at;
        lineEmpty = false;
        afterCR = false;
        at = stop;
        continue;
      }
      const byte = chunk[at++];
      if (byte === 10 && afterCR) {
        afterCR = false;
        continue;
      }
      afterCR = byte === 13;
      if (lineEmpty) {
        eventBytes = 0;
        continue;
      }
      lineEmpty = true;
      if (++eventBytes > max) return at - 1;
    }
    return chunk.length;
  };
}
