import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAudit } from '../audit/audit.service.js';
import { isoRequired } from '../common/schemas.js';
import { AppError, notFound } from '../errors.js';
import type { CustomDomainDto } from './custom-domains.schemas.js';
import { countIntentsByDomain } from '../intents/intent-records.js';
import { isBuiltInDomain } from './built-in-domains.js';
import { deleteDomain, findDomain, flushDomainChanges, insertDomain, listDomains, listDomainsPage, type CustomDomainRow } from './store/custom-domains.js';

function toDomainDto(domain: CustomDomainRow, intentCount: number): CustomDomainDto {
  return {
    id: domain.id,
    domain_key: domain.domainKey,
    display_name: domain.displayName,
    description: domain.description ?? null,
    is_active: domain.isActive,
    sort_order: domain.sortOrder,
    intent_count: intentCount,
    created_at: isoRequired(domain.createdAt),
    updated_at: isoRequired(domain.updatedAt),
  };
}

async function countIntents(em: EntityManager, tenantId: string): Promise<Map<string, number>> {
  const rows = await countIntentsByDomain(em, tenantId);
  return new Map(rows.map((r) => [r.domain_id, Number(r.n)]));
}

export async function listCustomDomains(em: EntityManager, tenantId: string) {
  const domains = await listDomains(em, tenantId);
  const counts = await countIntents(em, tenantId);
  return { domains: domains.map((d) => toDomainDto(d, counts.get(d.id) ?? 0)) };
}

/** One page of the tenant's custom domains, in the order listCustomDomains gives them all. */
export async function listCustomDomainsPage(em: EntityManager, tenantId: string, page: { limit: number; offset: number }) {
  const [domains, total] = await listDomainsPage(em, tenantId, page);
  const counts = await countIntents(em, tenantId);
  return { domains: domains.map((d) => toDomainDto(d, counts.get(d.id) ?? 0)), pagination: { total, limit: page.limit, offset: page.offset } };
}

/** The domain row, or 404 (another tenant's key is simply not found). */
export async function findCustomDomain(em: EntityManager, tenantId: string, domainKey: string) {
  const domain = await findDomain(em, tenantId, domainKey);
  if (!domain) throw notFound('Custom domain');
  return domain;
}

export async function getCustomDomain(em: EntityManager, tenantId: string, domainKey: string) {
  const domain = await findCustomDomain(em, tenantId, domainKey);
  const counts = await countIntents(em, tenantId);
  return { domain: toDomainDto(domain, counts.get(domain.id) ?? 0) };
}

export async function createCustomDomain(
  em: EntityManager,
  tenantId: string,
  actor: Actor,
  input: { domain_key: string; display_name: string; description?: string | null; is_active?: boolean; sort_order?: number },
) {
  if (isBuiltInDomain(input.domain_key)) {
    throw new AppError('DOMAIN_KEY_TAKEN', `"${input.domain_key}" is a built-in domain`);
  }
  const domain = await em.transactional(async (tx) => {
    const created = await insertDomain(tx, tenantId, {
      domainKey: input.domain_key,
      displayName: input.display_name,
      description: input.description ?? null,
      isActive: input.is_active ?? true,
      sortOrder: input.sort_order ?? 0,
    });
    if (!created) throw new AppError('DOMAIN_KEY_TAKEN', `A domain "${input.domain_key}" exists already`);
    recordAudit(tx, tenantId, actor, { action: 'custom_domain.created', targetType: 'custom_domain', targetId: created.id, details: { domain_key: created.domainKey } });
    await flushDomainChanges(tx);
    return created;
  });
  return { domain: toDomainDto(domain, 0) };
}

export async function updateCustomDomain(
  em: EntityManager,
  tenantId: string,
  actor: Actor,
  domainKey: string,
  input: { display_name?: string; description?: string | null; is_active?: boolean; sort_order?: number },
) {
  await em.transactional(async (tx) => {
    const domain = await findCustomDomain(tx, tenantId, domainKey);
    if (input.display_name !== undefined) domain.displayName = input.display_name;
    if (input.description !== undefined) domain.description = input.description;
    if (input.is_active !== undefined) domain.isActive = input.is_active;
    if (input.sort_order !== undefined) domain.sortOrder = input.sort_order;
    recordAudit(tx, tenantId, actor, { action: 'custom_domain.updated', targetType: 'custom_domain', targetId: domain.id, details: { domain_key: domainKey, fields: Object.keys(input) } });
    await flushDomainChanges(tx);
  });
  return getCustomDomain(em, tenantId, domainKey);
}

/** Deletes the domain with its intents and their versions. */
export async function deleteCustomDomain(em: EntityManager, tenantId: string, actor: Actor, domainKey: string) {
  await em.transactional(async (tx) => {
    const domain = await findCustomDomain(tx, tenantId, domainKey);
    recordAudit(tx, tenantId, actor, { action: 'custom_domain.deleted', targetType: 'custom_domain', targetId: domain.id, details: { domain_key: domainKey } });
    await flushDomainChanges(tx);
    await deleteDomain(tx, domain.id);
  });
}
