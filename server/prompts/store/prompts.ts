// The prompts and prompt_versions tables; this module alone writes them.
import type { InferEntity } from '@mikro-orm/core';
import { Prompt, PromptVersion } from '../../../db/entities/intent.js';
import { kyselyOf } from '../../../db/kysely.js';
import type { EntityManager } from '../../../db/orm.js';
import { isUniqueViolation } from '../../../db/unique-violation.js';

export type { IPrompt as PromptRow } from '../../../db/entities/intent.js';
export type PromptVersionRow = InferEntity<typeof PromptVersion>;
type PromptEntity = InferEntity<typeof Prompt>;

/**
 * The tenant's prompt with this key, or null. With `lock` the row is locked (`for update`, so
 * concurrent version saves queue) and re-read past the identity map.
 */
export async function findPrompt(em: EntityManager, tenantId: string, promptKey: string, lock = false): Promise<PromptEntity | null> {
  if (lock) {
    await kyselyOf(em).selectFrom('prompts').select('id').where('tenant_id', '=', tenantId).where('prompt_key', '=', promptKey).forUpdate().execute();
  }
  return em.findOne(Prompt, { tenant: tenantId, promptKey }, { refresh: lock });
}

export async function listPrompts(em: EntityManager, tenantId: string): Promise<PromptEntity[]> {
  return em.find(Prompt, { tenant: tenantId }, { orderBy: { promptKey: 'asc' } });
}

/** The prompt's versions, newest first. */
export async function listPromptVersions(em: EntityManager, prompt: PromptEntity): Promise<PromptVersionRow[]> {
  return em.find(PromptVersion, { prompt }, { orderBy: { versionNumber: 'desc' } });
}

/** Version `versionNumber` of the tenant's prompt `promptKey`, or null. */
export async function findPromptVersion(em: EntityManager, tenantId: string, promptKey: string, versionNumber: number): Promise<PromptVersionRow | null> {
  return em.findOne(PromptVersion, { tenant: tenantId, prompt: { promptKey, tenant: tenantId }, versionNumber });
}

/**
 * Inserts a prompt with its version 1 (flushing the unit of work); null when the tenant has a
 * prompt with this key already (the transaction is then aborted: the caller must end it).
 */
export async function insertPrompt(
  em: EntityManager,
  tenantId: string,
  values: { promptKey: string; name: string; description: string | null; template: string; note: string | null; createdBy: string | null },
): Promise<{ prompt: PromptEntity; version: PromptVersionRow } | null> {
  const prompt = em.create(Prompt, { tenant: tenantId, promptKey: values.promptKey, name: values.name, description: values.description, latestVersion: 1 });
  const version = em.create(PromptVersion, { tenant: tenantId, prompt, versionNumber: 1, template: values.template, note: values.note, createdBy: values.createdBy });
  try {
    await em.flush();
  } catch (err) {
    if (isUniqueViolation(err)) return null;
    throw err;
  }
  return { prompt, version };
}

/**
 * Adds the next version to the unit of work (written by the next flush). The caller holds the
 * prompt's row lock (`findPrompt(..., true)`), so concurrent saves get consecutive numbers.
 */
export function appendPromptVersion(em: EntityManager, tenantId: string, prompt: PromptEntity, values: { template: string; note: string | null; createdBy: string | null }): PromptVersionRow {
  prompt.latestVersion += 1;
  return em.create(PromptVersion, { tenant: tenantId, prompt, versionNumber: prompt.latestVersion, template: values.template, note: values.note, createdBy: values.createdBy });
}

/** Writes the pending changes of the unit of work (prompt rows and whatever else it holds). */
export async function flushPromptChanges(em: EntityManager): Promise<void> {
  await em.flush();
}

/** Deletes the prompt (its versions go with it, by foreign-key cascade). */
export async function deletePrompt(em: EntityManager, promptId: string): Promise<void> {
  await kyselyOf(em).deleteFrom('prompts').where('id', '=', promptId).execute();
}
