// Evaluation suites: one intent (fixed at creation, checked to exist) evaluated on one of the
// tenant's datasets, with the judge's rubric and pass threshold, and at most one custom scorer (a CEL
// expression, or a webhook whose signing secret is stored encrypted and never shown).
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '../../db/orm.js';
import { isoRequired, isUuid } from '../common/schemas.js';
import type { AppDeps } from '../deps.js';
import { AppError, invalidInput, notFound } from '../errors.js';
import { resolveIntent } from '../intents/resolve-intent.js';
import { decryptSecret, encryptSecret, resolveEncryptionKey } from '../llm/secret-box.js';
import { webhookSecretKey } from '../net/signed-webhook.js';
import type { TenantRuntime } from '../tenants/tenant-runtime.js';
import { compileExpression } from '../workflows/expressions.js';
import type { CreateSuiteInput, SuiteDto, UpdateSuiteInput } from './evals.schemas.js';
import { findTenantDataset } from './store/datasets.js';
import { deleteTenantSuite, findTenantSuite, insertSuite, listTenantSuitesPage, updateSuiteFields, type SuiteRow, type SuiteValues } from './store/suites.js';

// Projects key suites by name, so a name is the tenant's once (a unique index decides races).
const nameTaken = (name: string) => new AppError('SUITE_NAME_TAKEN', `A suite named "${name}" exists already`, { name });

const secretContext = (tenantId: string, suiteId: string) => `eval-scorer-webhook-secret:${tenantId}:${suiteId}`;

export function toSuiteDto(s: SuiteRow, tenantId: string): SuiteDto {
  return {
    id: s.id,
    tenant_id: tenantId,
    name: s.name,
    domain_key: s.domainKey,
    intent_key: s.intentKey,
    dataset_id: typeof s.dataset === 'string' ? s.dataset : s.dataset.id,
    judge_rubric: s.judgeRubric ?? null,
    pass_threshold: Number(s.passThreshold),
    custom_scorer_expression: s.customScorerExpression ?? null,
    custom_scorer_label: s.customScorerLabel ?? null,
    custom_scorer_webhook_url: s.customScorerWebhookUrl ?? null,
    custom_scorer_webhook_secret_set: !!s.customScorerWebhookSecret,
    fallback_models: s.fallbackModels ?? null,
    baseline_run_id: s.baselineRunId ?? null,
    created_at: isoRequired(s.createdAt),
    updated_at: isoRequired(s.updatedAt),
  };
}

export async function findSuite(em: EntityManager, tenantId: string, id: string): Promise<SuiteRow> {
  const suite = isUuid(id) ? await findTenantSuite(em, tenantId, id) : null;
  if (!suite) throw notFound('Suite');
  return suite;
}

async function datasetOf(em: EntityManager, tenantId: string, datasetId: string) {
  const dataset = isUuid(datasetId) ? await findTenantDataset(em, tenantId, datasetId) : null;
  if (!dataset) throw invalidInput('dataset_id is not one of your datasets', [{ path: 'dataset_id', message: `no dataset ${datasetId}` }]);
  return dataset;
}

/** The intent must exist and be usable by the tenant: a 400 naming the field otherwise. */
async function checkIntent(em: EntityManager, tenant: TenantRuntime, domainKey: string, intentKey: string) {
  try {
    await resolveIntent(em, tenant, domainKey, intentKey);
  } catch (err) {
    if (!(err instanceof AppError)) throw err;
    throw invalidInput(`The intent ${domainKey}/${intentKey} cannot be evaluated: ${err.message}`, [{ path: 'intent_key', message: err.message, code: err.code }]);
  }
}

function checkExpression(source: string) {
  const compiled = compileExpression(source, 'eval_scorer');
  if (!compiled.ok) {
    throw invalidInput(`custom_scorer_expression does not compile: ${compiled.error}`, [{ path: 'custom_scorer_expression', message: compiled.error }]);
  }
}

function checkWebhookUrl(value: string) {
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch {
    // reported below
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw invalidInput('custom_scorer_webhook_url must be an http(s) URL', [{ path: 'custom_scorer_webhook_url', message: 'expected an http(s) URL' }]);
  }
}

/** A scorer secret's length in characters, and the fewest key bytes it signs with. */
const SCORER_SECRET_CHARS = { min: 8, max: 500 } as const;
const MIN_SCORER_KEY_BYTES = 8;
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f-\u009f]/;

// The specification sets no format: any secret goes, and signs with its key (webhookSecretKey: a
// `whsec_` secret its base64-decoded bytes, any other its UTF-8 bytes). A secret no receiver could be
// configured with (control characters), or a `whsec_` one without base64 after it, would be stored
// and then fail or mislead every scorer call of every run: refused when saved. The message never
// repeats the secret.
function checkScorerSecret(secret: string) {
  const refuse = (message: string) => invalidInput(`custom_scorer_webhook_secret ${message}`, [{ path: 'custom_scorer_webhook_secret', message }]);
  // The request schemas check the length too; a deployed project's secret comes here only.
  if (secret.length < SCORER_SECRET_CHARS.min || secret.length > SCORER_SECRET_CHARS.max) throw refuse(`must be ${SCORER_SECRET_CHARS.min} to ${SCORER_SECRET_CHARS.max} characters`);
  if (CONTROL_CHARACTER.test(secret)) throw refuse('must not contain control characters (line breaks, tabs, ...)');
  const key = webhookSecretKey(secret);
  if (!key) throw refuse('starts with whsec_ (a Standard Webhooks secret) but is not followed by base64');
  if (key.length < MIN_SCORER_KEY_BYTES) throw refuse(`must give a key of at least ${MIN_SCORER_KEY_BYTES} bytes (a whsec_ secret: its base64-decoded bytes)`);
}

/** The scorer fields as they will be after the request: at most one kind, a webhook with its secret. */
function checkScorer(next: { expression: string | null; url: string | null; hasSecret: boolean; newSecret?: string | null }) {
  if (next.expression && next.url) {
    throw invalidInput('A suite has at most one custom scorer: an expression or a webhook', [
      { path: 'custom_scorer_expression', message: 'set together with custom_scorer_webhook_url' },
    ]);
  }
  if (next.expression) checkExpression(next.expression);
  if (next.url) {
    checkWebhookUrl(next.url);
    if (!next.hasSecret) {
      throw invalidInput('custom_scorer_webhook_url needs custom_scorer_webhook_secret (it signs each request)', [
        { path: 'custom_scorer_webhook_secret', message: 'required with custom_scorer_webhook_url' },
      ]);
    }
  }
  if (next.newSecret) checkScorerSecret(next.newSecret);
}

export async function listSuites(em: EntityManager, tenantId: string, filter: { domain_key?: string; intent_key?: string; limit: number; offset: number }) {
  const [suites, total] = await listTenantSuitesPage(em, tenantId, { domainKey: filter.domain_key, intentKey: filter.intent_key, limit: filter.limit, offset: filter.offset });
  return { suites: suites.map((s) => toSuiteDto(s, tenantId)), pagination: { total, limit: filter.limit, offset: filter.offset } };
}

export async function createSuite(em: EntityManager, deps: AppDeps, tenant: TenantRuntime, input: CreateSuiteInput) {
  const tenantId = tenant.id;
  const dataset = await datasetOf(em, tenantId, input.dataset_id);
  await checkIntent(em, tenant, input.domain_key, input.intent_key);
  const expression = input.custom_scorer_expression ?? null;
  const url = input.custom_scorer_webhook_url ?? null;
  checkScorer({ expression, url, hasSecret: !!input.custom_scorer_webhook_secret, newSecret: input.custom_scorer_webhook_secret });
  const id = randomUUID();
  const secret = url && input.custom_scorer_webhook_secret ? encryptSecret(await resolveEncryptionKey(em, deps.config), input.custom_scorer_webhook_secret, secretContext(tenantId, id)) : null;
  const suite = await insertSuite(em, {
    id,
    tenantId,
    name: input.name,
    domainKey: input.domain_key,
    intentKey: input.intent_key,
    dataset,
    judgeRubric: input.judge_rubric ?? null,
    passThreshold: input.pass_threshold ?? 4,
    customScorerExpression: expression,
    customScorerLabel: input.custom_scorer_label ?? null,
    customScorerWebhookUrl: url,
    customScorerWebhookSecret: secret,
    fallbackModels: input.fallback_models ?? null,
  });
  if (!suite) throw nameTaken(input.name);
  return { suite: toSuiteDto(suite, tenantId) };
}

export async function getSuite(em: EntityManager, tenantId: string, id: string) {
  return { suite: toSuiteDto(await findSuite(em, tenantId, id), tenantId) };
}

/** Edits a suite; its domain and intent never change (they are what its runs compare). */
export async function updateSuite(em: EntityManager, deps: AppDeps, tenantId: string, input: UpdateSuiteInput) {
  const suite = await findSuite(em, tenantId, input.id);
  const changes: Partial<SuiteValues> = {};
  if (input.dataset_id !== undefined) changes.dataset = await datasetOf(em, tenantId, input.dataset_id);
  const expression = input.custom_scorer_expression !== undefined ? input.custom_scorer_expression : (suite.customScorerExpression ?? null);
  const url = input.custom_scorer_webhook_url !== undefined ? input.custom_scorer_webhook_url : (suite.customScorerWebhookUrl ?? null);
  const newSecret = input.custom_scorer_webhook_secret;
  const hasSecret = newSecret !== undefined ? newSecret !== null : !!suite.customScorerWebhookSecret;
  checkScorer({ expression, url, hasSecret, newSecret });
  if (input.name !== undefined) changes.name = input.name;
  if (input.judge_rubric !== undefined) changes.judgeRubric = input.judge_rubric;
  if (input.pass_threshold !== undefined) changes.passThreshold = input.pass_threshold;
  if (input.custom_scorer_label !== undefined) changes.customScorerLabel = input.custom_scorer_label;
  if (input.fallback_models !== undefined) changes.fallbackModels = input.fallback_models;
  changes.customScorerExpression = expression;
  changes.customScorerWebhookUrl = url;
  if (!url) changes.customScorerWebhookSecret = null;
  else if (newSecret) changes.customScorerWebhookSecret = encryptSecret(await resolveEncryptionKey(em, deps.config), newSecret, secretContext(tenantId, suite.id));
  if ((await updateSuiteFields(em, suite, changes)).nameTaken) throw nameTaken(input.name ?? suite.name);
  return { suite: toSuiteDto(suite, tenantId) };
}

export async function deleteSuite(em: EntityManager, tenantId: string, id: string) {
  const suite = await findSuite(em, tenantId, id);
  await deleteTenantSuite(em, tenantId, suite.id);
}

/** A suite's stored scorer webhook secret in plain text (for signing), or null when it no longer decrypts. */
export async function scorerWebhookSecret(em: EntityManager, deps: AppDeps, tenantId: string, suiteId: string, stored: string): Promise<string | null> {
  return decryptSecret(await resolveEncryptionKey(em, deps.config), stored, secretContext(tenantId, suiteId));
}
