// The email_tokens table (one-time tokens sent by e-mail, stored as their hash); this module alone writes it.
import { sql } from 'kysely';
import type { EMAIL_TOKEN_KINDS } from '../../../db/column-values.js';
import { EmailToken } from '../../../db/entities/user.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';

export type EmailTokenKind = (typeof EMAIL_TOKEN_KINDS)[number];

/** Inserts the token now (with whatever else `em` holds). */
export async function insertEmailToken(em: EntityManager, values: { userId: string; kind: EmailTokenKind; tokenHash: string; expiresAt: Date }): Promise<void> {
  em.create(EmailToken, { user: values.userId, kind: values.kind, tokenHash: values.tokenHash, expiresAt: values.expiresAt });
  await em.flush();
}

/** The token of this hash and kind with its user loaded; null when there is none. */
export async function findEmailTokenWithUser(em: EntityManager, tokenHash: string, kind: EmailTokenKind) {
  return em.findOne(EmailToken, { tokenHash, kind }, { populate: ['user'] });
}

/** Marks every unused token of this kind of the user used. */
export async function useUserEmailTokens(em: EntityManager, userId: string, kind: EmailTokenKind): Promise<void> {
  await kyselyOf(em)
    .updateTable('email_tokens')
    .set({ used_at: sql<Date>`now()` })
    .where('user_id', '=', userId)
    .where('kind', '=', kind)
    .where('used_at', 'is', null)
    .execute();
}

/** E-mail tokens expired before `now`, or used before `usedBefore`. */
export async function deleteExpiredEmailTokens(em: EntityManager, now: Date, usedBefore: Date): Promise<number> {
  const result = await kyselyOf(em)
    .deleteFrom('email_tokens')
    .where((eb) => eb.or([eb('expires_at', '<', now), eb('used_at', '<', usedBefore)]))
    .executeTakeFirst();
  return Number(result.numDeletedRows ?? 0n);
}
