// The readiness probe's question to the database: does it answer at all?
import { sql } from 'kysely';
import { kyselyOf } from './kysely.js';
import type { EntityManager } from './orm.js';

export async function pingDatabase(em: EntityManager): Promise<void> {
  await kyselyOf(em).selectNoFrom(sql.lit(1).as('one')).execute();
}
