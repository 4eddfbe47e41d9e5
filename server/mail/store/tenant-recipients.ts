// Which addresses belong to a tenant's own users with a confirmed e-mail (read from users).
import { sql as kysql } from 'kysely';
import type { SqlPool } from '../../../db/sql-pool.js';
import { build, statement } from '../../../db/statements.js';

const VERIFIED_RECIPIENTS = statement<{ tenantId: string; addresses: string[] }>()('mail_verified_recipients', (p) =>
  build
    .selectFrom('users')
    .select('email')
    .where('tenant_id', '=', p.tenantId)
    .where(kysql<boolean>`email_verified`)
    .where(kysql<boolean>`${kysql.ref('email')} = any(${p.addresses}::text[])`),
);

/** Of `addresses` (lower-cased, as users.email is stored), those of the tenant's users with a verified e-mail. */
export async function verifiedUserAddresses(sql: SqlPool, tenantId: string, addresses: string[]): Promise<Set<string>> {
  const rows = await VERIFIED_RECIPIENTS.run(sql, { tenantId, addresses });
  return new Set(rows.map((row) => row.email));
}
