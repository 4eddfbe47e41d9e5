// Typed Kysely for hand-shaped statements: the table and column types come from the entities, so a
// renamed column fails the type check instead of a query at run time.
import type { InferKyselyDB } from '@mikro-orm/sql';
import type { Kysely } from 'kysely';
import type { entities } from './entities/index.js';
import type { EntityManager } from './orm.js';

/** Every table as the database names it (snake_case tables and columns, foreign keys as `<name>_id`). */
export type Database = InferKyselyDB<(typeof entities)[number]>;

/** A Kysely bound to `em`'s connection and, inside `em.transactional`, to its transaction. */
export function kyselyOf(em: EntityManager): Kysely<Database> {
  return em.getKysely<Database>();
}
