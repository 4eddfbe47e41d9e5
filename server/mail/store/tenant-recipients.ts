// Which addresses belong to a tenant's own users with a confirmed e-mail (read from users).
import type { SqlPool } from '../../../db/sql-pool.js';

/** Of `addresses` (lower-cased, as users.email is stored), those of the tenant's users with a verified e-mail. */
export async function verifiedUserAddresses(sql: SqlPool, tenantId: string, addresses: string[]): Promise<Set<string>> {
  const rows = await sql.query<{ email: string }>(
    'select email from users where tenant_id = $1 and email_verified and email = any($2::text[])',
    [tenantId, addresses],
    'mail_verified_recipients',
  );
  return new Set(rows.map((row) => row.email));
}
