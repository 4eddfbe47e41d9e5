// The ingestion benchmark's yardstick: the same upload answered by a plain node:http handler and
// ingested by plain JavaScript on plain `pg`, with the same guarantees as Liya and nothing else:
//
//  - the dashboard token is checked (HS256 signature and expiry by hand with node:crypto; the user,
//    their role and the tenant's state read from the database, inside the write statement);
//  - bad input answers 4xx (not base64 or empty 400, over 25 MB 413, a collection that is not the
//    tenant's 404, a token that does not verify 401, a viewer 403);
//  - before the 202 answer, ONE statement, committed synchronously, stores the document
//    (processing), its collection references, the ingestion job row holding the bytes and the audit
//    entry: once answered, the upload is on disk and its job row is the recovery record (a real
//    server of this kind would sweep pending rows at start; that sweep costs nothing per upload);
//  - then, in this process, at most `concurrency` at a time: chunkText with the platform default
//    (the same chunker as Liya, so the same chunks), and ONE statement that completes the job
//    (gated on its row still being pending), inserts the chunks with their full-text vector and
//    marks the document ready. Its commit is asynchronous: a crash could only lose the completion,
//    and the job row, still pending, would be ingested again.
//
// No queue, no framework, no ORM, no schema validation library, no progress writes.
import { createHmac, createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { chunkText, DEFAULT_CHUNKING } from '../../server/documents/chunk-text.js';
import { readJsonBody, sendJson } from './lib.js';

export interface IngestionBaselineOptions {
  url: string;
  poolMax: number;
  /** The server's HS256 key: the baseline accepts the same dashboard tokens. */
  jwtKey: Uint8Array;
  /** Ingestions at once (Liya's WORKER_CONCURRENCY). */
  concurrency: number;
}

export interface IngestionBaselineServer {
  url: string;
  /** Settles when every accepted upload has been ingested. */
  idle(): Promise<void>;
  close(): Promise<void>;
}

const MAX_BYTES = 25 * 1024 * 1024;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const WRITER_ROLES = ['developer', 'admin', 'owner'];

const INSERT_UPLOAD = `
  with author as (
    select u.id, u.role from users u join tenants t on t.id = u.tenant_id
     where u.id = $1 and u.tenant_id = $2 and t.is_active and (u.password_changed_at is null or u.password_changed_at <= to_timestamp($3))
  ), allowed as (
    select 1 from author where role = any($4::text[]) and (select count(*) from collections where tenant_id = $2 and id = any($10::uuid[])) = cardinality($10::uuid[])
  ), doc as (
    insert into documents (id, tenant_id, name, category, mime_type, size_bytes, content_hash, status, characters, pages, chunk_count, embedding_model, uploaded_by, uploaded_at, updated_at)
    select $5, $2, $6, 'document', 'text/markdown', $7, $8, 'processing', 0, null, 0, null, $9, now(), now() from allowed
    returning id
  ), refs as (
    insert into document_collections (document_id, collection_id, tenant_id, created_at) select doc.id, c, $2, now() from doc, unnest($10::uuid[]) c
  ), job as (
    insert into ingestion_jobs (id, tenant_id, document_id, source_type, name, status, stage, progress, options, content, created_by, created_at)
    select $11, $2, doc.id, 'upload', $6, 'pending', null, 0, '{}'::jsonb, $12, $9, now() from doc
  ), audit as (
    insert into audit_log (id, tenant_id, actor_type, actor_id, actor_name, action, target_type, target_id, details, created_at)
    select gen_random_uuid(), $2, 'user', $1::text, $9, 'document.uploaded', 'document', doc.id::text, $13::jsonb, now() from doc
  )
  select (select role from author) as role, (select count(*)::int from doc) as stored`;

const COMPLETE = `
  with job as (
    update ingestion_jobs set status = 'completed', stage = 'completed', progress = 100, content = null, result = $4::jsonb, started_at = $5, completed_at = now()
     where id = $1 and status = 'pending'
    returning id
  ), chunks as (
    insert into document_chunks (id, tenant_id, document_id, ordinal, text, characters, locator, search_vector, embedding, created_at)
    select gen_random_uuid(), $2, $3, c.ordinal - 1, c.text, c.characters, c.locator, to_tsvector('english', unaccent(c.text)), null, now()
      from unnest($6::text[], $7::int[], $8::text[]) with ordinality as c(text, characters, locator, ordinal)
     where exists (select 1 from job)
  ), doc as (
    update documents set status = 'ready', characters = $9, chunk_count = cardinality($6::text[]), updated_at = now() where id = $3 and exists (select 1 from job)
  )
  select set_config('synchronous_commit', 'off', true), (select count(*)::int from job) as completed`;

/** The claims of a valid, unexpired HS256 token; null otherwise. */
function verifyToken(key: Uint8Array, token: string): { sub: string; tid: string; iat: number } | null {
  const [header, payload, signature] = token.split('.');
  if (!header || !payload || !signature) return null;
  const expected = createHmac('sha256', key).update(`${header}.${payload}`).digest();
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
  try {
    if (JSON.parse(Buffer.from(header, 'base64url').toString()).alg !== 'HS256') return null;
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    if (typeof claims.sub !== 'string' || typeof claims.tid !== 'string' || typeof claims.exp !== 'number' || claims.exp * 1000 < Date.now()) return null;
    return claims;
  } catch {
    return null;
  }
}

export async function startIngestionBaselineServer(options: IngestionBaselineOptions): Promise<IngestionBaselineServer> {
  const pool = new pg.Pool({ connectionString: options.url, max: options.poolMax });
  pool.on('error', () => undefined);
  const waiting: { jobId: string; tenantId: string; documentId: string; text: string }[] = [];
  let active = 0;
  let idleResolve: (() => void) | null = null;

  async function ingest(job: (typeof waiting)[number]) {
    const startedAt = new Date();
    const pieces = chunkText(job.text, DEFAULT_CHUNKING);
    const result = { chunks: pieces.length, characters: job.text.length, pages: null, embedded: false, embedding_model: null, chunking: DEFAULT_CHUNKING };
    await pool.query({
      name: 'bench_ingestion_baseline_complete',
      text: COMPLETE,
      values: [job.jobId, job.tenantId, job.documentId, JSON.stringify(result), startedAt, pieces.map((p) => p.text), pieces.map((p) => p.text.length), pieces.map((p) => p.locator), job.text.length],
    });
  }

  function pump() {
    while (active < options.concurrency && waiting.length) {
      const job = waiting.shift()!;
      active++;
      ingest(job)
        .catch((err: unknown) => console.error('baseline ingestion failed', err))
        .finally(() => {
          active--;
          pump();
          if (active === 0 && waiting.length === 0) idleResolve?.();
        });
    }
  }

  async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
    if (req.method !== 'POST' || req.url !== '/dashboard/documents') return sendJson(res, 404, { success: false });
    const claims = verifyToken(options.jwtKey, /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '');
    if (!claims) return sendJson(res, 401, { success: false, error: { code: 'INVALID_TOKEN' } });
    const body = await readJsonBody(req).catch(() => null);
    const content = typeof body?.content_base64 === 'string' ? body.content_base64.replace(/\s+/g, '') : null;
    const name = typeof body?.name === 'string' ? body.name : '';
    const collectionIds: unknown = body?.collection_ids ?? [];
    if (!content || !BASE64.test(content) || !name || name.length > 300 || !Array.isArray(collectionIds) || !collectionIds.every((id) => typeof id === 'string')) {
      return sendJson(res, 400, { success: false, error: { code: 'INVALID_INPUT' } });
    }
    if ((content.length * 3) / 4 > MAX_BYTES + 2) return sendJson(res, 413, { success: false, error: { code: 'PAYLOAD_TOO_LARGE' } });
    const bytes = Buffer.from(content, 'base64');
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(bytes).trim();
    } catch {
      text = '';
    }
    if (!text) return sendJson(res, 400, { success: false, error: { code: 'INVALID_INPUT' } });
    const documentId = randomUUID();
    const jobId = randomUUID();
    const ids = [...new Set(collectionIds as string[])];
    const { rows } = await pool.query<{ role: string | null; stored: number }>({
      name: 'bench_ingestion_baseline_upload',
      text: INSERT_UPLOAD,
      values: [
        claims.sub, claims.tid, claims.iat, WRITER_ROLES, documentId, name, bytes.length, createHash('sha256').update(bytes).digest('hex'), 'bench user', ids, jobId, bytes,
        JSON.stringify({ name, mime_type: 'text/markdown', size_bytes: bytes.length, job_id: jobId, collection_ids: ids }),
      ],
    });
    if (rows[0].role === null) return sendJson(res, 401, { success: false, error: { code: 'INVALID_TOKEN' } });
    if (!WRITER_ROLES.includes(rows[0].role)) return sendJson(res, 403, { success: false, error: { code: 'FORBIDDEN' } });
    if (rows[0].stored !== 1) return sendJson(res, 404, { success: false, error: { code: 'NOT_FOUND' } });
    sendJson(res, 202, { success: true, data: { jobId, status: 'pending' } });
    waiting.push({ jobId, tenantId: claims.tid, documentId, text });
    pump();
  }

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      console.error('baseline upload failed', err);
      if (!res.headersSent) sendJson(res, 500, { success: false });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let closing: Promise<void> | null = null;
  return {
    url: `http://127.0.0.1:${port}`,
    idle: () => (active === 0 && waiting.length === 0 ? Promise.resolve() : new Promise<void>((resolve) => (idleResolve = resolve))),
    close: () =>
      (closing ??= (async () => {
        await new Promise<void>((resolve) => server.close(() => resolve()));
        await pool.end();
      })()),
  };
}
