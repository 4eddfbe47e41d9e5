// Pruning of rows that outlived their use in tables whose features' stores have no pruning
// function yet (intent_cache, sessions); each function deletes or closes rows and answers how many
// changed.
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

const count = (n: bigint | undefined) => Number(n ?? 0n);



export async function deleteExpiredIntentCache(em: EntityManager, now: Date): Promise<number> {
  const result = await kyselyOf(em).deleteFrom('intent_cache').where('expires_at', '<', now).executeTakeFirst();
  return count(result.numDeletedRows);
}

/** Active sessions idle since before `idleBefore` become expired. */
export async function expireIdleSessions(em: EntityManager, idleBefore: Date): Promise<number> {
  const result = await kyselyOf(em)
    .updateTable('sessions')
    .set({ status: 'expired' })
    .where('status', '=', 'active')
    .where('last_activity_at', '<', idleBefore)
    .executeTakeFirst();
  return count(result.numUpdatedRows);
}





