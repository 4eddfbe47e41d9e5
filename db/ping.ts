// The readiness probe's question to the database: does it answer at all?
import type { EntityManager } from './orm.js';

export async function pingDatabase(em: EntityManager): Promise<void> {
  await em.getConnection().execute('select 1', [], 'get');
}
