// Unique violations look different by the path that raised them: MikroORM wraps the driver's
// error in UniqueConstraintViolationException, Kysely and the SqlPool pass pg's error (SQLSTATE
// 23505) as it is. Stores ask this one function, whichever they used.
import { UniqueConstraintViolationException } from '@mikro-orm/core';

/** Whether `err` is PostgreSQL refusing a duplicate key (optionally of the named constraint). */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const { code, constraint: name, cause } = err as { code?: unknown; constraint?: unknown; cause?: { constraint?: unknown } };
  const unique = err instanceof UniqueConstraintViolationException || code === '23505';
  return unique && (constraint === undefined || (name ?? cause?.constraint) === constraint);
}

/**
 * Flushes `em`; false, with nothing written and the unit of work cleared, when a unique key refused
 * it (a name another row of the tenant has): the store's caller answers its own 409.
 */
export async function flushUnlessDuplicate(em: { flush(): Promise<void>; clear(): void }): Promise<boolean> {
  try {
    await em.flush();
    return true;
  } catch (err) {
    if (!isUniqueViolation(err)) throw err;
    em.clear();
    return false;
  }
}
