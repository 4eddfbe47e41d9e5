// The platform_settings table: secrets the platform generates once and every process shares (the
// JWT signing secret, the provider-key encryption key); this module alone writes it.
import { sql } from 'kysely';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

/** The setting's value (undefined: not set). */
export async function selectPlatformSetting(em: EntityManager, key: string): Promise<string | undefined> {
  const row = await kyselyOf(em).selectFrom('platform_settings').select('value').where('key', '=', key).executeTakeFirst();
  return row?.value;
}

/** Sets the value unless the setting exists (the first writer wins a race; read it back after). */
export async function insertPlatformSettingIfAbsent(em: EntityManager, key: string, value: string): Promise<void> {
  await kyselyOf(em)
    .insertInto('platform_settings')
    .values({ key, value, created_at: sql`now()` })
    .onConflict((oc) => oc.column('key').doNothing())
    .execute();
}
