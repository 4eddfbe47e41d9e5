// What an apply would change: the project in the form an export would show it after the apply
// (canonical), diffed field by field against the tenant's export. Secrets are compared here, on the
// server, and never appear in a plan.
import { createHash } from 'node:crypto';
import diff from 'microdiff';
import type { EntityManager } from '../../db/orm.js';
import type { ToolsConfig } from '../agents/agents.schemas.js';
import { revealMcpHeaders } from '../agents/mcp-headers.js';
import type { AppDeps } from '../deps.js';
import { invalidInput, type ValidationIssue } from '../errors.js';
import { scorerWebhookSecret } from '../evals/suites.service.js';
import { listTenantSuites } from '../evals/store/suites.js';
import { findAgent } from '../agents/store/agents.js';
import { applyStepInputs } from '../workflows/apply-step-inputs.js';
import type { StepInput } from '../workflows/workflows.schemas.js';
import type { FieldChange, Plan, ResourceChange } from './deploys.schemas.js';
import { exportProject, exportSteps, mcpHeaderSecret, scorerSecret, type ReferenceMaps } from './export-project.js';
import { KIND_LIST, RESOURCE_KINDS, resourceKey, SECRET_REFERENCE, type Project, type ResourceKind } from './project.schemas.js';

/** Secret values of the project that differ from the stored ones (or are new), by where they go. */
export interface SecretValues {
  /** `${agentKey}\u0000${server}\u0000${header}` -> the new value. */
  mcpHeaders: Map<string, string>;
  /** suite name -> the new scorer webhook secret. */
  scorerSecrets: Map<string, string>;
  /** References with no value in the environment and nothing stored (an apply refuses them). */
  missing: ValidationIssue[];
}

export interface ProjectPlan {
  plan: Plan;
  current: Project;
  desired: Project;
  refs: ReferenceMaps;
  secrets: SecretValues;
}

const CHANGED_SECRET = '(secret)';

/** JSON with every object's keys sorted: the same value always gives the same text. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** What identifies a plan's changes: equal digests, the same changes (whatever order jsonb keeps keys in). */
export const planDigest = (changes: ResourceChange[]) => createHash('sha256').update(canonicalJson(changes)).digest('hex');
type Resource = { key: string; domain?: string };

export const mcpHeaderSlot = (agentKey: string, server: string, header: string) => `${agentKey}\u0000${server}\u0000${header}`;

/**
 * Plans `raw` (an already parsed project) against the tenant. A resource kind the project has no
 * list entry for still counts: a project names everything it manages (prune deletes the rest), except
 * guardrails, which are left alone when the project has none.
 */
export async function planProject(em: EntityManager, deps: AppDeps, tenantId: string, raw: Project, prune: boolean): Promise<ProjectPlan> {
  checkUniqueKeys(raw);
  const { project: current, refs } = await exportProject(em, tenantId);
  const secrets: SecretValues = { mcpHeaders: new Map(), scorerSecrets: new Map(), missing: [] };
  const desired = await canonicalize(em, deps, tenantId, raw, current, secrets);
  checkPromptHistories(current, desired);

  const changes: ResourceChange[] = [];
  const untracked: Plan['untracked'] = [];
  let unchanged = 0;
  for (const kind of RESOURCE_KINDS) {
    const list = KIND_LIST[kind];
    const before = new Map((current[list] as Resource[]).map((r) => [resourceKey(kind, r), r]));
    if (kind === 'guardrails' && desired.guardrails.length === 0) continue;
    for (const resource of desired[list] as Resource[]) {
      const key = resourceKey(kind, resource);
      const old = before.get(key);
      if (!old) {
        changes.push({ kind, key, action: 'create', fields: createdFields(kind, resource) });
        continue;
      }
      const fields = fieldChanges(kind, old, resource);
      if (fields.length) changes.push({ kind, key, action: 'update', fields });
      else unchanged++;
    }
    const named = new Set((desired[list] as Resource[]).map((r) => resourceKey(kind, r)));
    for (const [key, old] of before) {
      if (named.has(key) || kind === 'guardrails') continue;
      // An inactive agent is as good as deleted (agents are never removed, only switched off).
      if (kind === 'agent' && (old as unknown as { status: string }).status !== 'active') continue;
      untracked.push({ kind, key });
    }
  }
  if (prune) {
    for (const kind of [...RESOURCE_KINDS].reverse()) {
      for (const u of untracked) if (u.kind === kind) changes.push({ kind, key: u.key, action: 'delete', fields: [] });
    }
  }
  const count = (action: ResourceChange['action']) => changes.filter((c) => c.action === action).length;
  return {
    plan: { changes, summary: { create: count('create'), update: count('update'), delete: count('delete'), unchanged }, untracked: prune ? [] : untracked, digest: planDigest(changes) },
    current,
    desired,
    refs,
    secrets,
  };
}

function checkUniqueKeys(project: Project) {
  const issues: ValidationIssue[] = [];
  for (const kind of RESOURCE_KINDS) {
    const seen = new Map<string, number>();
    (project[KIND_LIST[kind]] as Resource[]).forEach((r, i) => {
      const key = resourceKey(kind, r);
      if (seen.has(key)) issues.push({ path: `project.${KIND_LIST[kind]}.${i}.key`, message: `${kind} "${key}" is defined twice (also at index ${seen.get(key)})`, code: 'duplicate_key' });
      else seen.set(key, i);
    });
  }
  if (issues.length) throw invalidInput('The project names a resource twice', issues);
}

/** Prompt versions are immutable: the project may only add versions at the end of the server's history. */
function checkPromptHistories(current: Project, desired: Project) {
  const issues: ValidationIssue[] = [];
  const stored = new Map(current.prompts.map((p) => [p.key, p.versions]));
  desired.prompts.forEach((p, i) => {
    const have = stored.get(p.key);
    if (!have) return;
    const diverged = have.findIndex((v, n) => !p.versions[n] || p.versions[n].template !== v.template || p.versions[n].note !== v.note);
    if (diverged >= 0) {
      issues.push({
        path: `project.prompts.${i}.versions.${diverged}`,
        message: `version ${diverged + 1} of prompt "${p.key}" differs from the server's (versions are immutable: add a new version at the end instead)`,
        code: 'immutable_version',
      });
    }
  });
  if (issues.length) throw invalidInput('The project rewrites prompt history', issues);
}

/** The project as an export would show it once applied. */
async function canonicalize(em: EntityManager, deps: AppDeps, tenantId: string, raw: Project, current: Project, secrets: SecretValues): Promise<Project> {
  const project = structuredClone(raw);
  for (const intent of project.intents) {
    if (intent.retrieval_config?.collections) intent.retrieval_config.collections = [...new Set(intent.retrieval_config.collections)].sort();
  }
  for (const workflow of project.workflows) workflow.steps = canonicalSteps(workflow.steps);
  const currentAgents = new Map(current.agents.map((a) => [a.key, a]));
  for (const [index, agent] of project.agents.entries()) {
    await resolveMcpSecrets(em, deps, tenantId, agent, index, currentAgents.has(agent.key), secrets);
  }
  const currentSuites = new Map(current.eval_suites.map((s) => [s.key, s]));
  const storedSuites = new Map((await listTenantSuites(em, tenantId, {})).map((s) => [s.name, s]));
  for (const [index, suite] of project.eval_suites.entries()) {
    const value = suite.custom_scorer_webhook_secret;
    if (value === null) continue;
    const ref = scorerSecret(suite.key);
    const stored = storedSuites.get(suite.key);
    const reference = SECRET_REFERENCE.exec(value);
    if (reference) {
      if (currentSuites.get(suite.key)?.custom_scorer_webhook_secret) suite.custom_scorer_webhook_secret = ref;
      else {
        secrets.missing.push({ path: `project.eval_suites.${index}.custom_scorer_webhook_secret`, message: `the secret ${value} has no value: set ${reference[1]} in the environment`, code: 'missing_secret' });
        suite.custom_scorer_webhook_secret = CHANGED_SECRET;
      }
      continue;
    }
    const same = stored?.customScorerWebhookSecret ? (await scorerWebhookSecret(em, deps, tenantId, stored.id, stored.customScorerWebhookSecret)) === value : false;
    if (!same) secrets.scorerSecrets.set(suite.key, value);
    suite.custom_scorer_webhook_secret = same ? ref : CHANGED_SECRET;
  }
  return project;
}

async function resolveMcpSecrets(em: EntityManager, deps: AppDeps, tenantId: string, agent: Project['agents'][number], index: number, exists: boolean, secrets: SecretValues) {
  const servers = agent.tools_config?.mcp_servers;
  if (!servers) return;
  const row = exists ? await findAgent(em, tenantId, agent.key) : null;
  const storedServers = ((row?.toolsConfig as ToolsConfig | null)?.mcp_servers ?? []);
  for (const [serverIndex, server] of servers.entries()) {
    if (!server.headers) continue;
    const stored = storedServers.find((s) => s.name === server.name);
    const revealed = stored ? await revealMcpHeaders(em, deps, tenantId, agent.key, stored) : {};
    for (const [name, value] of Object.entries(server.headers)) {
      const ref = mcpHeaderSecret(agent.key, server.name, name);
      const reference = SECRET_REFERENCE.exec(value);
      if (reference) {
        if (revealed[name] !== undefined) server.headers[name] = ref;
        else {
          secrets.missing.push({ path: `project.agents.${index}.tools_config.mcp_servers.${serverIndex}.headers.${name}`, message: `the secret ${value} has no value: set ${reference[1]} in the environment`, code: 'missing_secret' });
          server.headers[name] = CHANGED_SECRET;
        }
        continue;
      }
      if (revealed[name] === value) server.headers[name] = ref;
      else {
        secrets.mcpHeaders.set(mcpHeaderSlot(agent.key, server.name, name), value);
        server.headers[name] = CHANGED_SECRET;
      }
    }
  }
}

/** The steps as they would be stored (the same normalisation as a PATCH), in the export's form. */
function canonicalSteps(steps: Project['workflows'][number]['steps']): Project['workflows'][number]['steps'] {
  const { steps: stored } = applyStepInputs(null, toStepInputs(steps));
  return exportSteps(stored);
}

export function toStepInputs(steps: Project['workflows'][number]['steps']): StepInput[] {
  return steps.map((s) => ({
    id: s.id,
    step_type: s.step_type,
    name: s.name,
    action_id: s.action_id,
    config: s.config,
    position_x: s.position_x,
    position_y: s.position_y,
    guidance: s.guidance,
    on_success_ref: s.on_success,
    on_failure_ref: s.on_failure,
  }));
}

const isSecretPath = (kind: ResourceKind, path: (string | number)[]) =>
  (kind === 'agent' && path.includes('headers')) || (kind === 'eval_suite' && path[0] === 'custom_scorer_webhook_secret');

const shown = (kind: ResourceKind, path: (string | number)[], value: unknown) => (value != null && isSecretPath(kind, path) ? CHANGED_SECRET : value);

function createdFields(kind: ResourceKind, resource: Resource): FieldChange[] {
  return Object.entries(resource)
    .filter(([field, value]) => value !== null && !(Array.isArray(value) && value.length === 0) && field !== 'key' && field !== 'domain')
    .map(([field, value]) => ({ path: field, change: 'added' as const, after: shown(kind, [field], value) }));
}

function fieldChanges(kind: ResourceKind, before: Resource, after: Resource): FieldChange[] {
  return diff(before as Record<string, unknown>, after as Record<string, unknown>).map((d): FieldChange => {
    const path = d.path.join('.');
    if (d.type === 'CREATE') return { path, change: 'added', after: shown(kind, d.path, d.value) };
    if (d.type === 'REMOVE') return { path, change: 'removed', before: shown(kind, d.path, d.oldValue) };
    // A secret that stays a secret but gets a new value.
    if (isSecretPath(kind, d.path)) return { path, change: 'changed', before: CHANGED_SECRET, after: CHANGED_SECRET };
    return { path, change: 'changed', before: d.oldValue, after: d.value };
  });
}
