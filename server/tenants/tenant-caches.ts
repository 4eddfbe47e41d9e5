// What this process keeps in memory per tenant (a knowledge vocabulary built from its documents,
// embeddings of its queries...) must not outlive the tenant. Each cache registers how to forget one
// tenant; a deletion calls them all. Other processes' caches expire on their own (each has a TTL or
// is checked against the database before use), and none is reachable without the tenant's key.
type Forget = (tenantId: string) => void;

const forgetters: Forget[] = [];

/** Registers how a cache forgets one tenant (called once, where the cache is defined). */
export function onTenantDeleted(forget: Forget): void {
  forgetters.push(forget);
}

/** Forgets the tenant in every registered cache of this process. */
export function forgetTenantCaches(tenantId: string): void {
  for (const forget of forgetters) forget(tenantId);
}
