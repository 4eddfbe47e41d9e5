import type { EntityManager } from '../../db/orm.js';
import { isoRequired } from '../common/schemas.js';
import { notFound } from '../errors.js';
import type { VersionSummaryDto } from './custom-intents.schemas.js';
import { diffDefinitions, findCustomIntent, type Definition } from './custom-intents.service.js';
import { findIntentVersion, listIntentVersions as listIntentVersionRows, listRecentIntentVersions, type IntentVersionRow } from './store/custom-intents.js';

function toSummary(v: IntentVersionRow): VersionSummaryDto {
  return {
    id: v.id,
    version_number: v.versionNumber,
    changed_fields: v.changedFields,
    change_type: v.changeType,
    restored_from_version: v.restoredFromVersion ?? null,
    created_by: v.createdBy ?? null,
    actorName: v.actorName ?? null,
    created_at: isoRequired(v.createdAt),
  };
}

export async function listIntentVersions(em: EntityManager, tenantId: string, domainKey: string, intentKey: string) {
  const intent = await findCustomIntent(em, tenantId, domainKey, intentKey);
  const versions = await listIntentVersionRows(em, intent);
  return { versions: versions.map(toSummary) };
}

async function findVersion(em: EntityManager, tenantId: string, domainKey: string, intentKey: string, versionNumber: number) {
  const intent = await findCustomIntent(em, tenantId, domainKey, intentKey);
  const version = await findIntentVersion(em, intent, versionNumber);
  if (!version) throw notFound('Version');
  return { intent, version };
}

export async function getIntentVersion(em: EntityManager, tenantId: string, domainKey: string, intentKey: string, versionNumber: number) {
  const { intent, version } = await findVersion(em, tenantId, domainKey, intentKey, versionNumber);
  return { version: { ...toSummary(version), intent_id: intent.id, domain_key: intent.domainKey, intent_key: intent.intentKey, definition: version.definition } };
}

/** Field-level diff between any two versions (either order). */
export async function diffIntentVersions(em: EntityManager, tenantId: string, domainKey: string, intentKey: string, from: number, to: number) {
  const a = await findVersion(em, tenantId, domainKey, intentKey, from);
  const b = await findVersion(em, tenantId, domainKey, intentKey, to);
  return { from, to, changes: diffDefinitions(a.version.definition as Partial<Definition>, b.version.definition as Partial<Definition>) };
}

/** Recent changes across every custom domain of the tenant, newest first. */
export async function listIntentVersionFeed(em: EntityManager, tenantId: string, page: { limit: number; offset: number }, filter: { domainKey?: string } = {}) {
  const [versions, total] = await listRecentIntentVersions(em, tenantId, page, filter.domainKey);
  return {
    versions: versions.map((v) => ({ ...toSummary(v), intent_id: v.intent.id, domain_key: v.intent.domainKey, intent_key: v.intent.intentKey })),
    pagination: { total, limit: page.limit, offset: page.offset },
  };
}
