// Whether the ids and keys an agent names belong to the tenant. Another tenant's id is reported
// exactly like a missing one.
import type { EntityManager } from '../../db/orm.js';
import { isUuid } from '../common/schemas.js';
import { isBuiltInDomain } from '../domains/built-in-domains.js';
import { isKnownDomain } from '../domains/domain-access.js';
import { getHiringIntent } from '../hiring/hiring-intents.js';
import { findCustomDomainKeys } from '../domains/domain-records.js';
import { findCustomIntentRefs } from '../intents/intent-records.js';
import { parseIntentRef } from '../intents/intent-ref.js';
import { findWorkflowRefs } from '../workflows/workflow-records.js';

export async function findUnknownIntentIds(em: EntityManager, tenantId: string, refs: string[]): Promise<string[]> {
  const parsed = refs.map((ref) => ({ ref, parsed: parseIntentRef(ref) }));
  const ids = parsed.flatMap((p) => (p.parsed?.kind === 'id' ? [p.parsed.id] : []));
  const keys = parsed.flatMap((p) => (p.parsed?.kind === 'key' && !isBuiltInDomain(p.parsed.domain) ? [`${p.parsed.domain}/${p.parsed.intent}`] : []));
  const found = new Set<string>();
  if (ids.length || keys.length) {
    const rows = await findCustomIntentRefs(em, tenantId, ids, keys);
    for (const row of rows) found.add(row.id).add(row.ref);
  }
  return parsed
    .filter(({ parsed: p }) => {
      if (!p) return true;
      if (p.kind === 'id') return !found.has(p.id);
      if (isBuiltInDomain(p.domain)) return !(p.domain === 'hiring' && getHiringIntent(p.intent));
      return !found.has(`${p.domain}/${p.intent}`);
    })
    .map((p) => p.ref);
}

/** Workflow ids or keys of the tenant (deployed or not: a draft may be deployed later). */
export async function findUnknownWorkflowIds(em: EntityManager, tenantId: string, refs: string[]): Promise<string[]> {
  const rows = await findWorkflowRefs(em, tenantId, refs.filter(isUuid).map((r) => r.toLowerCase()), refs);
  const found = new Set(rows.flatMap((r) => [r.id, r.workflow_key]));
  return refs.filter((r) => !found.has(isUuid(r) ? r.toLowerCase() : r));
}

/**
 * Domain keys the tenant has no domain for. Configuration only names domains: a built-in one not
 * enabled or an inactive custom one may be named (domain-access.ts's existence check); using it
 * later (a knowledge search) still needs it usable.
 */
export async function findUnknownDomainKeys(em: EntityManager, tenantId: string, keys: string[]): Promise<string[]> {
  const custom = keys.filter((k) => !isBuiltInDomain(k));
  const rows = custom.length ? await findCustomDomainKeys(em, tenantId, custom) : [];
  const found = new Set(rows.map((r) => r.domain_key));
  return keys.filter((k) => !isKnownDomain(k, found.has(k)));
}
