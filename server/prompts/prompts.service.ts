import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAudit } from '../audit/audit.service.js';
import { isoRequired } from '../common/schemas.js';
import { AppError, notFound } from '../errors.js';
import { listIntentBindings } from '../intents/intent-records.js';
import {
  appendPromptVersion, deletePrompt as deletePromptRow, findPrompt as findPromptRow, findPromptVersion, flushPromptChanges, insertPrompt,
  listPromptVersions, listPrompts as listPromptRows, type PromptRow,
} from './store/prompts.js';

const toPromptDto = (p: PromptRow) => ({
  id: p.id,
  prompt_key: p.promptKey,
  name: p.name,
  description: p.description ?? null,
  latest_version: p.latestVersion,
  created_at: isoRequired(p.createdAt),
  updated_at: isoRequired(p.updatedAt),
});

const toVersionDto = (v: { versionNumber: number; template: string; note?: string | null; createdBy?: string | null; createdAt: Date }) => ({
  version_number: v.versionNumber,
  template: v.template,
  note: v.note ?? null,
  created_by: v.createdBy ?? null,
  created_at: isoRequired(v.createdAt),
});

async function findPrompt(em: EntityManager, tenantId: string, promptKey: string, lock = false) {
  const prompt = await findPromptRow(em, tenantId, promptKey, lock);
  if (!prompt) throw notFound('Prompt');
  return prompt;
}

export async function listPrompts(em: EntityManager, tenantId: string) {
  const prompts = await listPromptRows(em, tenantId);
  return { prompts: prompts.map(toPromptDto) };
}

export async function getPrompt(em: EntityManager, tenantId: string, promptKey: string) {
  const prompt = await findPrompt(em, tenantId, promptKey);
  const versions = await listPromptVersions(em, prompt);
  return { prompt: toPromptDto(prompt), versions: versions.map(toVersionDto) };
}

export async function createPrompt(
  em: EntityManager,
  tenantId: string,
  actor: Actor,
  input: { prompt_key: string; name: string; description?: string | null; template: string; note?: string },
) {
  return em.transactional(async (tx) => {
    const created = await insertPrompt(tx, tenantId, {
      promptKey: input.prompt_key, name: input.name, description: input.description ?? null, template: input.template, note: input.note ?? null, createdBy: actor.id,
    });
    if (!created) throw new AppError('PROMPT_KEY_TAKEN', `A prompt "${input.prompt_key}" exists already`);
    const { prompt, version } = created;
    recordAudit(tx, tenantId, actor, { action: 'prompt.created', targetType: 'prompt', targetId: prompt.id, details: { prompt_key: input.prompt_key } });
    await flushPromptChanges(tx);
    return { prompt: toPromptDto(prompt), version: toVersionDto(version) };
  });
}

export async function addPromptVersion(em: EntityManager, tenantId: string, actor: Actor, promptKey: string, input: { template: string; note?: string }) {
  return em.transactional(async (tx) => {
    const prompt = await findPrompt(tx, tenantId, promptKey, true);
    const version = appendPromptVersion(tx, tenantId, prompt, { template: input.template, note: input.note ?? null, createdBy: actor.id });
    recordAudit(tx, tenantId, actor, { action: 'prompt.version_added', targetType: 'prompt', targetId: prompt.id, details: { prompt_key: promptKey, version: prompt.latestVersion } });
    await flushPromptChanges(tx);
    return { version: toVersionDto(version) };
  });
}

/** Renames or redescribes a prompt (its versions are immutable); audited when something changed. */
export async function updatePromptDetails(em: EntityManager, tenantId: string, actor: Actor, promptKey: string, input: { name: string; description: string | null }) {
  const prompt = await findPrompt(em, tenantId, promptKey, true);
  if (prompt.name === input.name && (prompt.description ?? null) === input.description) return;
  prompt.name = input.name;
  prompt.description = input.description;
  recordAudit(em, tenantId, actor, { action: 'prompt.updated', targetType: 'prompt', targetId: prompt.id, details: { prompt_key: promptKey } });
  await flushPromptChanges(em);
}

/** A prompt an intent is bound to cannot be deleted (409 CONFLICT) until the binding is removed. */
export async function deletePrompt(em: EntityManager, tenantId: string, actor: Actor, promptKey: string) {
  await em.transactional(async (tx) => {
    const prompt = await findPrompt(tx, tenantId, promptKey, true);
    const bound = await listIntentBindings(tx, tenantId);
    const users = bound.filter((i) => (i.promptBinding as { prompt_key?: string } | null)?.prompt_key === promptKey);
    if (users.length > 0) {
      throw new AppError('CONFLICT', 'Intents are bound to this prompt', { intents: users.map((i) => `${i.domainKey}/${i.intentKey}`) });
    }
    recordAudit(tx, tenantId, actor, { action: 'prompt.deleted', targetType: 'prompt', targetId: prompt.id, details: { prompt_key: promptKey } });
    await flushPromptChanges(tx);
    await deletePromptRow(tx, prompt.id);
  });
}

/** The template text of a bound prompt version (used when an intent runs). */
export async function resolvePromptBinding(em: EntityManager, tenantId: string, binding: { prompt_key: string; version: number }): Promise<string | null> {
  const version = await findPromptVersion(em, tenantId, binding.prompt_key, binding.version);
  return version?.template ?? null;
}
