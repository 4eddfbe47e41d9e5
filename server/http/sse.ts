// The one Server-Sent Events helper: every streaming endpoint (agent runs now, workflow runs
// later) writes through it. It owns the response once opened: headers, `event:`/`data:` framing
// (data is always JSON), heartbeats that keep proxies from closing an idle stream, and an abort
// signal that fires when the client goes away.
import type { FastifyReply, FastifyRequest } from 'fastify';

export interface SseStream {
  /** Writes one event; ignored after the stream closed. */
  send(event: string, data: unknown): void;
  /** Ends the response. */
  close(): void;
  /** Aborted when the client disconnects before close(). */
  readonly signal: AbortSignal;
}

export interface SseOptions {
  /** A comment line is written this often while nothing else is (default 15 s). */
  heartbeatMs?: number;
}

export function openSse(req: FastifyRequest, reply: FastifyReply, options: SseOptions = {}): SseStream {
  reply.hijack();
  const res = reply.raw;
  const controller = new AbortController();
  let closed = false;
  let sequence = 0;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache, no-transform',
    connection: 'keep-alive',
    // Reverse proxies (nginx) would otherwise buffer the stream.
    'x-accel-buffering': 'no',
    'x-request-id': req.id,
  });
  res.flushHeaders();
  const heartbeat = setInterval(() => {
    if (!closed) res.write(': ping\n\n');
  }, options.heartbeatMs ?? 15_000);
  heartbeat.unref();
  const finish = () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
  };
  // 'close' also fires after a normal end; only a close before it means the client left.
  res.on('close', () => {
    if (!closed) controller.abort(new Error('client disconnected'));
    finish();
  });
  return {
    signal: controller.signal,
    send(event, data) {
      if (closed || res.destroyed) return;
      res.write(`id: ${++sequence}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    },
    close() {
      if (closed) return;
      finish();
      res.end();
    },
  };
}
