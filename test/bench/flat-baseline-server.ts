// The fastest honest way to answer GET /v1/collections: plain node:http + pg over the simplest
// table shape that holds the same answer — one row per key (hash, tenant, revoked, tenant active)
// and one flat row per collection with its domain keys as an array column — and named prepared
// statements. Same guarantees as Liya's route: the key is checked on every request (a revocation
// takes effect at once), the list is the tenant's own, the body is the same envelope. What it
// leaves out is everything a platform has and a single-purpose handler does not: routing, a
// schema for the output, normalised tables, logs, metrics.
import { createHash } from 'node:crypto';
import type http from 'node:http';
import pg from 'pg';
import { DEFAULT_COLLECTION_COLOR } from '../../server/collections/collections.schemas.js';
import type { BaselineServer } from './baseline-server.js';
import { sendJson as send, serveBaseline } from './lib.js';

const KEY_PATTERN = /^svc_[A-Za-z0-9_-]{43}$/;

/** Copies the seeded keys and collections into the flat tables (same database, same rows). */
export async function createFlatTables(databaseUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query(`
      drop table if exists flat_collections;
      drop table if exists flat_api_keys;
      create table flat_api_keys (key_hash text primary key, tenant_id uuid not null, revoked boolean not null, tenant_active boolean not null);
      create table flat_collections (
        tenant_id uuid not null, created_at timestamptz not null, id uuid not null,
        slug text not null, label text not null, color text not null, domain_keys text[] not null, tags jsonb not null,
        visibility text not null, last_synced_at timestamptz, retrieval_config jsonb, default_embedding_model text,
        default_chunking_strategy text, default_chunk_size int, default_chunk_overlap int,
        primary key (tenant_id, created_at, id));
      insert into flat_api_keys
        select k.key_hash, k.tenant_id, k.revoked_at is not null, t.is_active from api_keys k join tenants t on t.id = k.tenant_id;
      insert into flat_collections
        select c.tenant_id, c.created_at, c.id, c.slug, c.label, coalesce(c.color, $color$${DEFAULT_COLLECTION_COLOR}$color$),
               c.domain_keys,
               c.tags, c.visibility, c.last_synced_at, c.retrieval_config, c.default_embedding_model,
               c.default_chunking_strategy, c.default_chunk_size, c.default_chunk_overlap
          from collections c;`);
    // Outside the statement above: VACUUM cannot run in a transaction block.
    await client.query('vacuum analyze flat_api_keys');
    await client.query('vacuum analyze flat_collections');
  } finally {
    await client.end();
  }
}

interface FlatRow {
  id: string;
  slug: string;
  label: string;
  color: string;
  created_at: Date;
  domain_keys: string[];
  tags: unknown;
  visibility: string;
  last_synced_at: Date | null;
  retrieval_config: unknown;
  default_embedding_model: string | null;
  default_chunking_strategy: string | null;
  default_chunk_size: number | null;
  default_chunk_overlap: number | null;
}

const KEY_QUERY = { name: 'flat_key', text: 'select tenant_id, revoked, tenant_active from flat_api_keys where key_hash = $1' };
const LIST_TEXT = `select id, slug, label, color, created_at, domain_keys, tags, visibility, last_synced_at, retrieval_config,
  default_embedding_model, default_chunking_strategy, default_chunk_size, default_chunk_overlap
  from flat_collections where tenant_id = $1 order by created_at, id`;

const fail = (res: http.ServerResponse, status: number, code: string, message: string) =>
  send(res, status, { success: false, error: { code, message } });

export async function startFlatBaselineServer(options: { databaseUrl: string; poolMax: number }): Promise<BaselineServer> {
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: options.poolMax });
  pool.on('error', () => undefined);

  async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
    if (req.method !== 'GET' || (req.url ?? '/').split('?')[0] !== '/v1/collections') return fail(res, 404, 'ROUTE_NOT_FOUND', 'No route');
    const auth = req.headers.authorization;
    const key = auth?.startsWith('Bearer ') ? auth.slice(7).trim() : auth?.trim();
    if (!key) return fail(res, 401, 'MISSING_API_KEY', 'Send your API key');
    if (!KEY_PATTERN.test(key)) return fail(res, 401, 'INVALID_API_KEY_FORMAT', 'Malformed API key');
    const hash = createHash('sha256').update(key).digest('hex');
    const found = await pool.query<{ tenant_id: string; revoked: boolean; tenant_active: boolean }>({ ...KEY_QUERY, values: [hash] });
    const row = found.rows[0];
    if (!row) return fail(res, 401, 'INVALID_API_KEY', 'The API key is not recognised');
    if (row.revoked) return fail(res, 401, 'API_KEY_REVOKED', 'The API key was revoked');
    if (!row.tenant_active) return fail(res, 403, 'ACCOUNT_INACTIVE', 'The account is deactivated');
    const list = await pool.query<FlatRow>({ name: 'flat_list', text: LIST_TEXT, values: [row.tenant_id] });
    const collections = list.rows.map((r) => ({
      id: r.id,
      slug: r.slug,
      label: r.label,
      color: r.color,
      created_at: r.created_at.toISOString(),
      domain_keys: r.domain_keys,
      tags: r.tags,
      visibility: r.visibility,
      last_synced_at: r.last_synced_at ? r.last_synced_at.toISOString() : null,
      retrieval_config: r.retrieval_config,
      default_embedding_model: r.default_embedding_model,
      default_chunking_strategy: r.default_chunking_strategy,
      default_chunk_size: r.default_chunk_size,
      default_chunk_overlap: r.default_chunk_overlap,
    }));
    send(res, 200, { success: true, data: { collections } });
  }

  return serveBaseline(handle, () => pool.end());
}
