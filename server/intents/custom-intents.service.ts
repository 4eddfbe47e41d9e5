import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAudit } from '../audit/audit.service.js';
import { isoRequired } from '../common/schemas.js';
import { findCustomDomain } from '../domains/custom-domains.service.js';
import { AppError, notFound } from '../errors.js';
import { findPromptVersion } from '../prompts/prompt-records.js';
import {
  DEFINITION_FIELDS, type CreateIntentInput, type CustomIntentDto, type DefinitionField, type UpdateIntentInput,
} from './custom-intents.schemas.js';
import {
  appendIntentVersion, createIntent, deleteIntent, findIntent, findIntentVersion, flushIntentChanges, flushNewIntent, listIntents, type CustomIntentRow,
} from './store/custom-intents.js';

type Json = Record<string, unknown> | null;
export type Definition = Record<DefinitionField, unknown>;

// Entity property behind each definition field.
const FIELD_PROPERTY: Record<DefinitionField, keyof CustomIntentRow & string> = {
  display_name: 'displayName',
  description: 'description',
  prompt_template: 'promptTemplate',
  prompt_binding: 'promptBinding',
  output_schema: 'outputSchema',
  input_schema: 'inputSchema',
  guardrails_config: 'guardrailsConfig',
  agent_config: 'agentConfig',
  execution_config: 'executionConfig',
  retrieval_config: 'retrievalConfig',
  cache_config: 'cacheConfig',
  sort_order: 'sortOrder',
  is_active: 'isActive',
};

export function toIntentDto(intent: CustomIntentRow): CustomIntentDto {
  return {
    id: intent.id,
    domain_key: intent.domainKey,
    intent_key: intent.intentKey,
    display_name: intent.displayName,
    description: intent.description ?? null,
    prompt_template: intent.promptTemplate,
    prompt_binding: (intent.promptBinding ?? null) as Json,
    output_schema: (intent.outputSchema ?? null) as Json,
    input_schema: (intent.inputSchema ?? null) as Json,
    guardrails_config: (intent.guardrailsConfig ?? null) as Json,
    agent_config: (intent.agentConfig ?? null) as Json,
    execution_config: (intent.executionConfig ?? null) as Json,
    retrieval_config: (intent.retrievalConfig ?? null) as Json,
    cache_config: (intent.cacheConfig ?? null) as Json,
    sort_order: intent.sortOrder,
    is_active: intent.isActive,
    current_version: intent.currentVersion,
    created_at: isoRequired(intent.createdAt),
    updated_at: isoRequired(intent.updatedAt),
  };
}

/** The full definition a version stores. */
export function snapshotDefinition(intent: CustomIntentRow): Definition {
  const dto = toIntentDto(intent) as unknown as Record<string, unknown>;
  return Object.fromEntries(DEFINITION_FIELDS.map((f) => [f, dto[f] ?? null])) as Definition;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

export function diffDefinitions(before: Partial<Definition>, after: Partial<Definition>) {
  return DEFINITION_FIELDS.filter((f) => !same(before[f], after[f])).map((field) => ({ field, before: before[field] ?? null, after: after[field] ?? null }));
}

function applyDefinition(intent: CustomIntentRow, values: Partial<Definition>) {
  for (const field of DEFINITION_FIELDS) {
    if (values[field] === undefined) continue;
    (intent as unknown as Record<string, unknown>)[FIELD_PROPERTY[field]] = values[field];
  }
}

async function assertBindingExists(em: EntityManager, tenantId: string, binding: unknown) {
  if (!binding) return;
  const { prompt_key, version } = binding as { prompt_key: string; version: number };
  const found = await findPromptVersion(em, tenantId, prompt_key, version);
  if (!found) {
    throw new AppError('INVALID_INPUT', `Prompt ${prompt_key} has no version ${version}`, { issues: [{ path: 'prompt_binding', message: 'no such prompt version' }] });
  }
}

/** Appends the next immutable version (numbered under the intent row lock; see appendIntentVersion). */
function appendVersion(
  tx: EntityManager,
  intent: CustomIntentRow,
  actor: Actor,
  change: { type: 'create' | 'update' | 'restore'; changedFields: string[]; restoredFrom?: number },
) {
  return appendIntentVersion(tx, intent, {
    definition: snapshotDefinition(intent),
    changedFields: change.changedFields,
    changeType: change.type,
    restoredFromVersion: change.restoredFrom ?? null,
    createdBy: actor.id,
    actorName: actor.name,
  });
}

export async function listCustomIntents(em: EntityManager, tenantId: string, domainKey: string) {
  const domain = await findCustomDomain(em, tenantId, domainKey);
  const intents = await listIntents(em, tenantId, domain);
  return { intents: intents.map(toIntentDto) };
}

export async function findCustomIntent(em: EntityManager, tenantId: string, domainKey: string, intentKey: string, lock = false) {
  const intent = await findIntent(em, tenantId, domainKey, intentKey, lock);
  if (!intent) throw notFound('Custom intent');
  return intent;
}

export async function getCustomIntent(em: EntityManager, tenantId: string, domainKey: string, intentKey: string) {
  return { intent: toIntentDto(await findCustomIntent(em, tenantId, domainKey, intentKey)) };
}

export async function createCustomIntent(em: EntityManager, tenantId: string, actor: Actor, input: CreateIntentInput) {
  const { domainKey, intent_key, ...fields } = input;
  const intent = await em.transactional(async (tx) => {
    const domain = await findCustomDomain(tx, tenantId, domainKey);
    await assertBindingExists(tx, tenantId, fields.prompt_binding);
    const created = createIntent(tx, tenantId, domain, {
      domainKey,
      intentKey: intent_key,
      displayName: fields.display_name,
      promptTemplate: fields.prompt_template,
    });
    applyDefinition(created, fields as Partial<Definition>);
    const changedFields = DEFINITION_FIELDS.filter((f) => fields[f as keyof typeof fields] !== undefined);
    appendVersion(tx, created, actor, { type: 'create', changedFields });
    if (!(await flushNewIntent(tx))) throw new AppError('INTENT_KEY_TAKEN', `An intent "${intent_key}" exists already in ${domainKey}`);
    recordAudit(tx, tenantId, actor, { action: 'custom_intent.created', targetType: 'custom_intent', targetId: created.id, details: { domain_key: domainKey, intent_key, version: 1 } });
    await flushIntentChanges(tx);
    return created;
  });
  return { intent: toIntentDto(intent) };
}

/** Every PATCH is an explicit save: it always makes a version, listing the fields that changed. */
export async function updateCustomIntent(em: EntityManager, tenantId: string, actor: Actor, input: UpdateIntentInput) {
  const { domainKey, key, ...fields } = input;
  const intent = await em.transactional(async (tx) => {
    const current = await findCustomIntent(tx, tenantId, domainKey, key, true);
    await assertBindingExists(tx, tenantId, fields.prompt_binding);
    const before = snapshotDefinition(current);
    applyDefinition(current, fields as Partial<Definition>);
    const changedFields = diffDefinitions(before, snapshotDefinition(current)).map((c) => c.field);
    const version = appendVersion(tx, current, actor, { type: 'update', changedFields });
    recordAudit(tx, tenantId, actor, { action: 'custom_intent.updated', targetType: 'custom_intent', targetId: current.id, details: { domain_key: domainKey, intent_key: key, version: version.versionNumber, changed_fields: changedFields } });
    await flushIntentChanges(tx);
    return current;
  });
  return { intent: toIntentDto(intent) };
}

export async function deleteCustomIntent(em: EntityManager, tenantId: string, actor: Actor, domainKey: string, intentKey: string) {
  await em.transactional(async (tx) => {
    const intent = await findCustomIntent(tx, tenantId, domainKey, intentKey, true);
    recordAudit(tx, tenantId, actor, { action: 'custom_intent.deleted', targetType: 'custom_intent', targetId: intent.id, details: { domain_key: domainKey, intent_key: intentKey } });
    await flushIntentChanges(tx);
    await deleteIntent(tx, intent.id);
  });
}

/** Restoring never deletes later versions: it saves a new `restore` version with the old content. */
export async function restoreIntentVersion(em: EntityManager, tenantId: string, actor: Actor, domainKey: string, intentKey: string, versionNumber: number) {
  const intent = await em.transactional(async (tx) => {
    const current = await findCustomIntent(tx, tenantId, domainKey, intentKey, true);
    const source = await findIntentVersion(tx, current, versionNumber);
    if (!source) throw notFound('Version');
    const before = snapshotDefinition(current);
    applyDefinition(current, source.definition as Partial<Definition>);
    const changedFields = diffDefinitions(before, snapshotDefinition(current)).map((c) => c.field);
    const version = appendVersion(tx, current, actor, { type: 'restore', changedFields, restoredFrom: versionNumber });
    recordAudit(tx, tenantId, actor, { action: 'custom_intent.restored', targetType: 'custom_intent', targetId: current.id, details: { domain_key: domainKey, intent_key: intentKey, restored_from_version: versionNumber, version: version.versionNumber } });
    await flushIntentChanges(tx);
    return current;
  });
  return { intent: toIntentDto(intent) };
}
