// The two admin routes that stream: a tenant's export (GET /admin/tenants/{tenantId}/export), an
// archive of any size written as it is read, and its import (POST /admin/tenants/import), an
// archive of any size read as it arrives. A procedure answers one JSON value, so these are raw
// routes: the archive never sits whole in memory on either side. The admin secret is checked
// before a byte of an import's body is read.
import { PassThrough, pipeline, Readable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { createGunzip, createGzip } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Actor } from '../actor.js';
import { authenticateAdmin } from '../auth/admin-auth.js';
import { envelope } from '../common/schemas.js';
import { rejectNulInUrl } from '../common/reject-nul.js';
import type { AppDeps } from '../deps.js';
import { AppError } from '../errors.js';
import { exportTenant, type ArchiveSink } from '../tenants/export-tenant.js';
import { importTenant } from '../tenants/import-tenant.js';
import { sendError } from './send-error.js';

const ADMIN: Actor = { type: 'admin', id: null, name: 'admin' };

/** Refused with more than this still to come, the connection is closed rather than drained. */
const DRAIN_LIMIT = 64 * 1024;
/** No row of an archive is this long: a line past it is damage (or not an archive), not a row. */
const MAX_LINE_CHARS = 256 * 1024 * 1024;

/** Whether the client takes a gzip-encoded response (`Accept-Encoding`, q > 0). */
function acceptsGzip(header: string | string[] | undefined): boolean {
  const value = Array.isArray(header) ? header.join(',') : (header ?? '');
  return value.split(',').some((part) => {
    const [coding, ...params] = part.trim().toLowerCase().split(';');
    if (coding !== 'gzip' && coding !== 'x-gzip') return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return !q || Number(q.slice(2)) > 0;
  });
}

/** Resolves when `stream` takes more, rejects when it was closed (the client went away). */
function drained(stream: PassThrough): Promise<void> {
  if (stream.destroyed) return Promise.reject(new Error('the client closed the connection'));
  return new Promise((resolve, reject) => {
    const done = () => {
      stream.off('close', gone);
      resolve();
    };
    const gone = () => {
      stream.off('drain', done);
      reject(new Error('the client closed the connection'));
    };
    stream.once('drain', done);
    stream.once('close', gone);
  });
}

/**
 * The archive's lines as they arrive: gzip (by its magic bytes, whatever the headers say) or plain,
 * UTF-8, `\n` or `\r\n`. More than `maxBytes` of NDJSON is 413 PAYLOAD_TOO_LARGE.
 */
async function* archiveLines(body: Readable, maxBytes: number): AsyncGenerator<string> {
  const chunks = body[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const first = await chunks.next();
  if (first.done) return;
  const gzipped = first.value.length >= 2 && first.value[0] === 0x1f && first.value[1] === 0x8b;
  async function* all(): AsyncGenerator<Buffer> {
    yield first.value;
    for (let item = await chunks.next(); !item.done; item = await chunks.next()) yield item.value;
  }
  let source: AsyncIterable<Buffer> = all();
  if (gzipped) {
    const gunzip = createGunzip();
    // An error of either side reaches the loop below through gunzip.
    pipeline(Readable.from(source), gunzip, () => undefined);
    source = gunzip;
  }
  const decoder = new StringDecoder('utf8');
  let bytes = 0;
  let pending = '';
  try {
    for await (const chunk of source) {
      bytes += chunk.length;
      if (bytes > maxBytes) throw new AppError('PAYLOAD_TOO_LARGE', `The archive is larger than TENANT_IMPORT_MAX_BYTES (${maxBytes} bytes of NDJSON)`, { limit_bytes: maxBytes });
      pending += decoder.write(chunk);
      let start = 0;
      for (let end = pending.indexOf('\n'); end >= 0; end = pending.indexOf('\n', start)) {
        yield pending.slice(start, end > start && pending[end - 1] === '\r' ? end - 1 : end);
        start = end + 1;
      }
      pending = pending.slice(start);
      if (pending.length > MAX_LINE_CHARS) throw new AppError('INVALID_ARCHIVE', 'A line of the archive is longer than any row: it is damaged');
    }
  } catch (err) {
    if (err instanceof AppError) throw err;
    // zlib's refusal of a damaged stream; a body cut off mid-transfer.
    throw new AppError('INVALID_ARCHIVE', `The archive cannot be read: ${(err as Error).message}`);
  }
  pending += decoder.end();
  if (pending !== '') yield pending;
}

/** An error answered before the body was read: a large or chunked body is not drained but its connection closed. */
function refuseEarly(req: FastifyRequest, reply: FastifyReply, err: unknown): FastifyReply {
  if (!req.raw.complete && (req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > DRAIN_LIMIT)) reply.header('connection', 'close');
  return sendError(req, reply, err);
}

export function registerTenantArchiveRoutes(app: FastifyInstance, deps: AppDeps): void {
  void app.register(async (scope) => {
    // The import reads its body itself, as a stream (any content type: NDJSON, or gzip).
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_req, payload, done) => done(null, payload));

    scope.get<{ Params: { tenantId: string }; Querystring: Record<string, unknown> }>('/admin/tenants/:tenantId/export', async (req, reply) => {
      const out = new PassThrough();
      // A client that goes away destroys the stream: the next write says so (drained), never an unhandled error.
      out.on('error', () => undefined);
      let started = false;
      try {
        authenticateAdmin(deps.config.ADMIN_SECRET, req.headers);
        rejectNulInUrl(req.params, req.query);
        const gzipParam = req.query.gzip;
        if (gzipParam !== undefined && gzipParam !== 'true' && gzipParam !== 'false') {
          throw new AppError('INVALID_INPUT', 'gzip must be true or false', { issues: [{ path: 'gzip', message: 'expected true or false' }] });
        }
        // ?gzip=true: a .gz file as the body; otherwise gzip as a transfer encoding when the client takes it.
        const asFile = gzipParam === 'true';
        const encoded = !asFile && acceptsGzip(req.headers['accept-encoding']);
        const tenantId = req.params.tenantId.slice(0, 64);
        const sink: ArchiveSink = {
          write: async (text) => {
            if (!started) {
              // The first line is written once the tenant was found: until then a refusal is an ordinary JSON error.
              started = true;
              reply
                .code(200)
                .header('content-type', asFile ? 'application/gzip' : 'application/x-ndjson; charset=utf-8')
                .header('content-disposition', `attachment; filename="liya-tenant-${tenantId}.ndjson${asFile ? '.gz' : ''}"`)
                .header('cache-control', 'no-store');
              if (encoded) reply.header('content-encoding', 'gzip').header('vary', 'accept-encoding');
              if (asFile || encoded) {
                const zipped = createGzip();
                pipeline(out, zipped, () => undefined);
                void reply.send(zipped);
              } else {
                void reply.send(out);
              }
            }
            if (out.destroyed) throw new Error('the client closed the connection');
            if (!out.write(text)) await drained(out);
          },
        };
        await exportTenant(deps, tenantId, sink, ADMIN);
        out.end();
      } catch (err) {
        if (!started) return sendError(req, reply, err);
        // The archive is cut off without its trailer: an import refuses it.
        req.log.warn({ err }, 'tenant export ended before its trailer');
        out.destroy(err as Error);
      }
      return reply;
    });

    scope.post(
      '/admin/tenants/import',
      {
        // Before the body is read: the admin secret, and a declared length over the limit.
        onRequest: (req, reply, done) => {
          try {
            authenticateAdmin(deps.config.ADMIN_SECRET, req.headers);
            const declared = Number(req.headers['content-length'] ?? 0);
            if (declared > deps.config.TENANT_IMPORT_MAX_BYTES) {
              throw new AppError('PAYLOAD_TOO_LARGE', `The archive is larger than TENANT_IMPORT_MAX_BYTES (${deps.config.TENANT_IMPORT_MAX_BYTES} bytes)`, { limit_bytes: deps.config.TENANT_IMPORT_MAX_BYTES });
            }
            done();
          } catch (err) {
            void refuseEarly(req, reply, err);
          }
        },
      },
      async (req, reply) => {
        const body = req.body as Readable | undefined;
        try {
          if (!body || typeof (body as Readable)[Symbol.asyncIterator] !== 'function') throw new AppError('INVALID_ARCHIVE', 'Send the archive as the request body');
          const result = await importTenant(deps, archiveLines(body, deps.config.TENANT_IMPORT_MAX_BYTES), ADMIN);
          return reply.code(201).send(envelope(result));
        } catch (err) {
          return refuseEarly(req, reply, err);
        }
      },
    );
  });
}
