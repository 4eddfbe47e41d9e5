// What an apply would change: the project in the form an export would show it after the apply
// (canonical), diffed field by field against the tenant's export. A secret value never appears in a
// plan, and a plan never compares one with the stored value (that would confirm a guess): values
// given are listed by path and written by the apply; a reference keeps what is stored.
import { createHash } from 'node:crypto';
import diff from 'microdiff';
import type { EntityManager } from '../../db/orm.js';
import type { ToolsConfig } from '../agents/agents.schemas.js';
import type { AppDeps } from '../deps.js';
import { invalidInput, type ValidationIssue } from '../errors.js';
import { listTenantSuites } from '../evals/eval-records.js';
import { findAgent } from '../agents/agent-records.js';
import { applyStepInputs } from '../workflows/apply-step-inputs.js';
import type { StepDef } from '../workflows/step-types.js';
import { hasMaskedCredentials, hasUrlCredentials, isHttpRequestStep, MASKED_SECRET, maskUrl, sameDestination } from '../workflows/step-secrets.js';
import { listDeployedWorkflows } from '../workflows/workflow-records.js';
import type { StepInput } from '../workflows/workflows.schemas.js';
import type { FieldChange, Plan, PlanSecret, ResourceChange } from './deploys.schemas.js';
import { exportProject, exportSteps, mcpHeaderSecret, scorerSecret, type ReferenceMaps } from './export-project.js';
import { KIND_LIST, RESOURCE_KINDS, resourceKey, SECRET_REFERENCE, type Project, type ResourceKind } from './project.schemas.js';
import { isSecretPath, misplacedReferences } from './secret-paths.js';

/** Secret values the project gives, by where they go (written by the apply, never compared by the plan). */
export interface SecretValues {
  /** `${agentKey}\u0000${server}\u0000${header}` -> the value. */
  mcpHeaders: Map<string, string>;
  /** suite name -> the scorer webhook secret. */
  scorerSecrets: Map<string, string>;
  /** `${workflowKey}\u0000${stepId}\u0000${header}` -> an http_request header value. */
  stepHeaders: Map<string, string>;
  /** `${workflowKey}\u0000${stepId}` -> an http_request URL with its credentials. */
  stepUrls: Map<string, string>;
  /** Where each value given goes (the plan lists these). */
  given: PlanSecret[];
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

/**
 * What identifies a plan: its changes and where it gives secret values (never the values). Equal
 * digests, the same plan, whatever order jsonb keeps keys in.
 */
const planDigest = (changes: ResourceChange[], secrets: PlanSecret[]) =>
  createHash('sha256').update(canonicalJson(secrets.length ? { changes, secrets } : changes)).digest('hex');
type Resource = { key: string; domain?: string };

export const mcpHeaderSlot = (agentKey: string, server: string, header: string) => `${agentKey}\u0000${server}\u0000${header}`;
export const stepHeaderSlot = (workflowKey: string, stepId: string, header: string) => `${workflowKey}\u0000${stepId}\u0000${header}`;
export const stepUrlSlot = (workflowKey: string, stepId: string) => `${workflowKey}\u0000${stepId}`;


/**
 * Plans `raw` (an already parsed project) against the tenant. A resource kind the project has no
 * list entry for still counts: a project names everything it manages (prune deletes the rest), except
 * guardrails, which are left alone when the project has none.
 */
export async function planProject(em: EntityManager, deps: AppDeps, tenantId: string, raw: Project, prune: boolean): Promise<ProjectPlan> {
  checkUniqueKeys(raw);
  const misplaced = misplacedReferences(raw);
  if (misplaced.length) throw invalidInput('The project has secret references outside the places for secrets', misplaced);
  const { project: current, refs } = await exportProject(em, tenantId);
  const secrets: SecretValues = { mcpHeaders: new Map(), scorerSecrets: new Map(), stepHeaders: new Map(), stepUrls: new Map(), given: [], missing: [] };
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
    plan: {
      changes,
      summary: { create: count('create'), update: count('update'), delete: count('delete'), unchanged },
      untracked: prune ? [] : untracked,
      secrets: secrets.given,
      digest: planDigest(changes, secrets.given),
    },
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
  const storedWorkflows = project.workflows.some((w) => w.steps.some(isHttpRequestStep))
    ? new Map((await listDeployedWorkflows(em, tenantId)).map((w) => [w.workflowKey, (w.liveSteps ?? []) as StepDef[]]))
    : new Map<string, StepDef[]>();
  for (const [index, workflow] of project.workflows.entries()) {
    collectStepSecrets(workflow, index, storedWorkflows.get(workflow.key) ?? [], secrets);
    workflow.steps = canonicalSteps(workflow.key, workflow.steps);
  }
  const currentAgents = new Map(current.agents.map((a) => [a.key, a]));
  for (const [index, agent] of project.agents.entries()) {
    await collectMcpSecrets(em, tenantId, agent, index, currentAgents.has(agent.key), secrets);
  }
  const storedSuites = new Map((await listTenantSuites(em, tenantId, {})).map((s) => [s.name, s]));
  for (const [index, suite] of project.eval_suites.entries()) {
    const value = suite.custom_scorer_webhook_secret;
    if (value === null) continue;
    const ref = scorerSecret(suite.key);
    const path = `project.eval_suites.${index}.custom_scorer_webhook_secret`;
    const reference = SECRET_REFERENCE.exec(value);
    if (reference && !storedSuites.get(suite.key)?.customScorerWebhookSecret) {
      secrets.missing.push({ path, message: `the secret ${value} has no value: set ${reference[1]} in the environment`, code: 'missing_secret' });
    } else if (!reference) {
      secrets.scorerSecrets.set(suite.key, value);
      secrets.given.push({ kind: 'eval_suite', key: suite.key, path: 'custom_scorer_webhook_secret' });
    }
    suite.custom_scorer_webhook_secret = ref;
  }
  return project;
}

const missingSecret = (secrets: SecretValues, path: string, value: string, why?: string) => {
  const name = SECRET_REFERENCE.exec(value)?.[1];
  secrets.missing.push({ path, message: why ?? (name ? `the secret ${value} has no value: set ${name} in the environment` : 'the secret has no value'), code: 'missing_secret' });
};

async function collectMcpSecrets(em: EntityManager, tenantId: string, agent: Project['agents'][number], index: number, exists: boolean, secrets: SecretValues) {
  const servers = agent.tools_config?.mcp_servers;
  if (!servers) return;
  const row = exists ? await findAgent(em, tenantId, agent.key) : null;
  const storedServers = (row?.toolsConfig as ToolsConfig | null)?.mcp_servers ?? [];
  for (const [serverIndex, server] of servers.entries()) {
    if (!server.headers) continue;
    // A stored value is kept only for the same server at the same URL (server/agents/mcp-headers.ts).
    const stored = storedServers.find((s) => s.name === server.name && s.url === server.url);
    const storedNames = new Set(Object.keys(stored?.headers ?? {}).map((n) => n.toLowerCase()));
    for (const [name, value] of Object.entries(server.headers)) {
      const path = `project.agents.${index}.tools_config.mcp_servers.${serverIndex}.headers.${name}`;
      if (SECRET_REFERENCE.test(value) || value === MASKED_SECRET) {
        if (!storedNames.has(name.toLowerCase())) missingSecret(secrets, path, value);
      } else {
        secrets.mcpHeaders.set(mcpHeaderSlot(agent.key, server.name, name), value);
        secrets.given.push({ kind: 'agent', key: agent.key, path: `tools_config.mcp_servers.${serverIndex}.headers.${name}` });
      }
      server.headers[name] = mcpHeaderSecret(agent.key, server.name, name);
    }
  }
}

/**
 * The credentials of a workflow's http_request steps: values given are recorded; a reference (or a
 * masked value) keeps the stored one, when there is one for the same step at the same destination.
 * The URL of a step is left as the stored masked form when it is a reference to the stored one.
 */
function collectStepSecrets(workflow: Project['workflows'][number], index: number, stored: StepDef[], secrets: SecretValues) {
  for (const [stepIndex, step] of workflow.steps.entries()) {
    if (!isHttpRequestStep(step)) continue;
    const config = step.config as Record<string, unknown>;
    const prior = stored.find((s) => s.id === step.id && isHttpRequestStep(s));
    const priorUrl = typeof prior?.config.url === 'string' ? prior.config.url : null;
    const priorHasUrlSecret = typeof prior?.config.url_secret === 'string' || (priorUrl !== null && hasUrlCredentials(priorUrl));
    const at = `project.workflows.${index}.steps.${stepIndex}.config`;
    const where = (field: string) => `steps.${stepIndex}.config.${field}`;
    if (typeof config.url === 'string') {
      const url = config.url;
      if (SECRET_REFERENCE.test(url)) {
        if (priorHasUrlSecret && priorUrl !== null) config.url = maskUrl(priorUrl);
        else missingSecret(secrets, `${at}.url`, url);
      } else if (hasMaskedCredentials(url)) {
        // The masked form an export writes: the stored credentials, when they are this very URL's.
        if (!(priorUrl !== null && maskUrl(priorUrl) === url)) missingSecret(secrets, `${at}.url`, url, 'the URL is masked (***) and nothing is stored for it: give the whole URL, or a ${NAME} reference');
      } else if (hasUrlCredentials(url)) {
        secrets.stepUrls.set(stepUrlSlot(workflow.key, step.id), url);
        secrets.given.push({ kind: 'workflow', key: workflow.key, path: where('url') });
      }
    }
    const headers = config.headers && typeof config.headers === 'object' ? (config.headers as Record<string, unknown>) : null;
    if (!headers) continue;
    const keepsHeaders = prior !== undefined && sameDestination(prior.config.url, config.url);
    const storedNames = new Set(Object.keys(keepsHeaders && prior?.config.headers && typeof prior.config.headers === 'object' ? prior.config.headers : {}).map((n) => n.toLowerCase()));
    for (const [name, value] of Object.entries(headers)) {
      if (typeof value !== 'string') continue;
      if (SECRET_REFERENCE.test(value) || value === MASKED_SECRET) {
        if (!storedNames.has(name.toLowerCase())) {
          missingSecret(secrets, `${at}.headers.${name}`, value, prior && !keepsHeaders && SECRET_REFERENCE.test(value)
            ? `the secret ${value} has no value: the step now calls another address, so its stored value is not sent there; set ${SECRET_REFERENCE.exec(value)![1]} in the environment`
            : undefined);
        }
      } else {
        secrets.stepHeaders.set(stepHeaderSlot(workflow.key, step.id, name), value);
        secrets.given.push({ kind: 'workflow', key: workflow.key, path: where(`headers.${name}`) });
      }
    }
  }
}

/** The steps as they would be stored (the same normalisation as a PATCH), in the export's form. */
function canonicalSteps(workflowKey: string, steps: Project['workflows'][number]['steps']): Project['workflows'][number]['steps'] {
  const { steps: stored } = applyStepInputs(null, toStepInputs(steps));
  return exportSteps(workflowKey, stored);
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

// Values at secret paths are references or masked URLs by now; shown so regardless, in case.
const shown = (kind: ResourceKind, path: (string | number)[], value: unknown) => {
  if (value == null || !isSecretPath(kind, path)) return value;
  return path[path.length - 1] === 'url' && typeof value === 'string' ? maskUrl(value) : CHANGED_SECRET;
};

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
    if (isSecretPath(kind, d.path)) return { path, change: 'changed', before: shown(kind, d.path, d.oldValue), after: shown(kind, d.path, d.value) };
    return { path, change: 'changed', before: d.oldValue, after: d.value };
  });
}
