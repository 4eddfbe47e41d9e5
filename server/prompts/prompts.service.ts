import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { CustomIntent, Prompt, PromptVersion, type IPrompt } from '../../db/entities/intent.js';
import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { recordAudit } from '../audit/audit.service.js';
import { isoRequired } from '../common/schemas.js';
import { AppError, notFound } from '../errors.js';

const toPromptDto = (p: IPrompt) => ({
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
  if (lock) await em.execute('select id from prompts where tenant_id = ? and prompt_key = ? for update', [tenantId, promptKey]);
  const prompt = await em.findOne(Prompt, { tenant: tenantId, promptKey }, { refresh: lock });
  if (!prompt) throw notFound('Prompt');
  return prompt;
}

export async function listPrompts(em: EntityManager, tenantId: string) {
  const prompts = await em.find(Prompt, { tenant: tenantId }, { orderBy: { promptKey: 'asc' } });
  return { prompts: prompts.map(toPromptDto) };
}

export async function getPrompt(em: EntityManager, tenantId: string, promptKey: string) {
  const prompt = await findPrompt(em, tenantId, promptKey);
  const versions = await em.find(PromptVersion, { prompt }, { orderBy: { versionNumber: 'desc' } });
  return { prompt: toPromptDto(prompt), versions: versions.map(toVersionDto) };
}

export async function createPrompt(
  em: EntityManager,
  tenantId: string,
  actor: Actor,
  input: { prompt_key: string; name: string; description?: string | null; template: string; note?: string },
) {
  try {
    return await em.transactional(async (tx) => {
      const prompt = tx.create(Prompt, { tenant: tenantId, promptKey: input.prompt_key, name: input.name, description: input.description ?? null, latestVersion: 1 });
      const version = tx.create(PromptVersion, { tenant: tenantId, prompt, versionNumber: 1, template: input.template, note: input.note ?? null, createdBy: actor.id });
      await tx.flush();
      recordAudit(tx, tenantId, actor, { action: 'prompt.created', targetType: 'prompt', targetId: prompt.id, details: { prompt_key: input.prompt_key } });
      await tx.flush();
      return { prompt: toPromptDto(prompt), version: toVersionDto(version) };
    });
  } catch (err) {
    if (err instanceof UniqueConstraintViolationException) throw new AppError('PROMPT_KEY_TAKEN', `A prompt "${input.prompt_key}" exists already`);
    throw err;
  }
}

export async function addPromptVersion(em: EntityManager, tenantId: string, actor: Actor, promptKey: string, input: { template: string; note?: string }) {
  return em.transactional(async (tx) => {
    const prompt = await findPrompt(tx, tenantId, promptKey, true);
    prompt.latestVersion += 1;
    const version = tx.create(PromptVersion, { tenant: tenantId, prompt, versionNumber: prompt.latestVersion, template: input.template, note: input.note ?? null, createdBy: actor.id });
    recordAudit(tx, tenantId, actor, { action: 'prompt.version_added', targetType: 'prompt', targetId: prompt.id, details: { prompt_key: promptKey, version: prompt.latestVersion } });
    await tx.flush();
    return { version: toVersionDto(version) };
  });
}

/** A prompt an intent is bound to cannot be deleted (409 CONFLICT) until the binding is removed. */
export async function deletePrompt(em: EntityManager, tenantId: string, actor: Actor, promptKey: string) {
  await em.transactional(async (tx) => {
    const prompt = await findPrompt(tx, tenantId, promptKey, true);
    const bound = await tx.find(CustomIntent, { tenant: tenantId }, { fields: ['domainKey', 'intentKey', 'promptBinding'] });
    const users = bound.filter((i) => (i.promptBinding as { prompt_key?: string } | null)?.prompt_key === promptKey);
    if (users.length > 0) {
      throw new AppError('CONFLICT', 'Intents are bound to this prompt', { intents: users.map((i) => `${i.domainKey}/${i.intentKey}`) });
    }
    recordAudit(tx, tenantId, actor, { action: 'prompt.deleted', targetType: 'prompt', targetId: prompt.id, details: { prompt_key: promptKey } });
    await tx.flush();
    await tx.execute('delete from prompts where id = ?', [prompt.id]);
  });
}

/** The template text of a bound prompt version (used when an intent runs). */
export async function resolvePromptBinding(em: EntityManager, tenantId: string, binding: { prompt_key: string; version: number }): Promise<string | null> {
  const version = await em.findOne(PromptVersion, { tenant: tenantId, prompt: { promptKey: binding.prompt_key, tenant: tenantId }, versionNumber: binding.version });
  return version?.template ?? null;
}
