// The benchmark's yardstick: GET /v1/collections written by hand on node:http + pg, doing the same
// work as Liya's route (read the Bearer key, check its format, SHA-256 it, one query for key and
// tenant, one query for the tenant's collections with their domain keys, the JSON envelope) and
// nothing else (no framework, no router, no validation of the output).
import { createHash } from 'node:crypto';
import type http from 'node:http';
import pg from 'pg';
import { LIST_COLLECTIONS_SQL, toCollectionDto } from '../../server/collections/collections.service.js';
import { sendJson as send, serveBaseline } from './lib.js';

const KEY_PATTERN = /^svc_[A-Za-z0-9_-]{43}$/;

// The same statement Liya runs to authenticate an API key.
const LOOKUP_SQL = `
  select k.id as key_id, k.revoked_at, k.environment_id, t.id as tenant_id, t.is_active
    from api_keys k
    join tenants t on t.id = k.tenant_id
    left join environments e on e.id = k.environment_id
   where k.key_hash = $1`;

const LIST_SQL = LIST_COLLECTIONS_SQL;

interface KeyRow {
  key_id: string;
  revoked_at: Date | null;
  tenant_id: string;
  is_active: boolean;
}

export interface BaselineServer {
  url: string;
  close(): Promise<void>;
}

const fail = (res: http.ServerResponse, status: number, code: string, message: string) =>
  send(res, status, { success: false, error: { code, message } });

function readKey(req: http.IncomingMessage): string | null {
  const auth = req.headers.authorization;
  if (!auth) return null;
  const match = /^Bearer\s+(.+)$/i.exec(auth.trim());
  return match ? match[1].trim() : auth.trim();
}

export async function startBaselineServer(options: { databaseUrl: string; poolMax: number }): Promise<BaselineServer> {
  const pool = new pg.Pool({ connectionString: options.databaseUrl, max: options.poolMax });
  pool.on('error', () => undefined);

  async function handle(req: http.IncomingMessage, res: http.ServerResponse) {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/v1/collections') return fail(res, 404, 'ROUTE_NOT_FOUND', 'No route');
    const key = readKey(req);
    if (!key) return fail(res, 401, 'MISSING_API_KEY', 'Send your API key');
    if (!KEY_PATTERN.test(key)) return fail(res, 401, 'INVALID_API_KEY_FORMAT', 'Malformed API key');
    const hash = createHash('sha256').update(key).digest('hex');
    const found = await pool.query<KeyRow>(LOOKUP_SQL, [hash]);
    const row = found.rows[0];
    if (!row) return fail(res, 401, 'INVALID_API_KEY', 'The API key is not recognised');
    if (row.revoked_at) return fail(res, 401, 'API_KEY_REVOKED', 'The API key was revoked');
    if (!row.is_active) return fail(res, 403, 'ACCOUNT_INACTIVE', 'The account is deactivated');
    const list = await pool.query(LIST_SQL, [row.tenant_id]);
    send(res, 200, { success: true, data: { collections: list.rows.map(toCollectionDto) } });
  }

  return serveBaseline(handle, () => pool.end());
}
