// Deploys as code: `liya export` writes a tenant's definitions (domains, prompts, collections,
// intents, guardrails, workflows, agents, eval datasets and suites) as a folder of YAML files,
// `liya plan` shows what applying a folder would change (exit 2 when something would), and
// `liya apply` deploys it, optionally behind an evaluation gate that must pass before anything goes live.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { Command, Option } from 'commander';
import { Box, Text } from 'ink';
import { createElement as h } from 'react';
import type { DeploymentDto, GateResult, Plan } from '../../server/deploys/deploys.schemas.js';
import type { Project } from '../../server/deploys/project.schemas.js';
import { action } from '../action.js';
import { ApiError, type ApiClient } from '../api-client.js';
import { commandContext } from '../context.js';
import { CliError, EXIT_FAILURE } from '../errors.js';
import { pollIntervalMs } from '../poll.js';
import type { EvalRun } from '../evals-report.js';
import { plural, segment } from '../format.js';
import { parseList } from '../options.js';
import { printJson, reportError, show, withSpinner } from '../output.js';
import { clearManagedFiles, existingProjectFiles, MANAGED_FOLDERS, MANAGED_ROOT_FILES, MAX_RESOURCE_DEPTH, tooDeepPath, managedLinks, renderProjectFiles, secretReferencesOf, writeProjectFiles } from '../project/export-files.js';
import { followDeployment, type SavedDeployment } from '../project/follow-deployment.js';
import { buildGateJUnit, GATE_ALIGN, GATE_HEADERS, gateFailureLine, gateRows, type GateSuiteReport } from '../project/gate-report.js';
import { formatIssue, loadProject, locateResource, locateServerIssue, ProjectFilesError, type LoadedProject } from '../project/load-project.js';
import { KIND_LIST, KINDS, type ProjectDocument } from '../project/project-kinds.js';
import { planHasChanges, planLines, planSummary, secretsNote, untrackedNote, type PlanLine } from '../project/plan-text.js';
import { redactSecrets } from '../project/secrets.js';
import { escapeControls, shownName } from '../project/shown-text.js';
import { Stack } from '../ui/stack.js';
import { StatusLine } from '../ui/status.js';
import { Table } from '../ui/table.js';
import { loadResults } from '../eval-api.js';
import { parsePassRate } from './evals.js';

/** A deployment may create many resources in one transaction: a longer time limit than a read's. */
const WRITE_TIMEOUT_MS = 120_000;
/** How long `apply` follows a gate. */
const MAX_GATE_WAIT_MS = 60 * 60_000;

const HINTS: Record<string, string> = {
  DEPLOYMENT_STALE: 'The server changed since the plan; nothing was published. Run liya plan again, then liya apply.',
  GATE_FAILED: 'Nothing was published: the versions live before stay live. Fix the definitions (or the suites) and apply again.',
};

// ---------------------------------------------------------------- errors

/** Request fields set by flags: their issues name the flag. */
const FLAGS: Record<string, string> = { gate: '--gate', min_pass_rate: '--min-pass-rate', prune: '--prune' };

function flagLabel(issuePath: string): string {
  const [head, ...rest] = issuePath.split('.');
  const flag = FLAGS[head];
  if (!flag) return issuePath || '(body)';
  return rest.length ? `${flag} (${rest.join('.')})` : flag;
}

/**
 * Prints `err` on stderr and returns the exit code: problems in the files and the server's issues
 * about the project at the file and line they concern; secrets filled in are never shown.
 */
async function reportDeployError(err: unknown, loaded?: LoadedProject): Promise<number> {
  const secrets = loaded?.secrets.values ?? new Set<string>();
  if (err instanceof ProjectFilesError) {
    await show(
      h(StatusLine, {
        kind: 'error',
        message: err.message,
        lines: err.issues.map(formatIssue),
        hints: err.issues.length ? ['A project file holds one resource: kind: and its fields, as in liya-project.schema.json (liya export writes it beside the files).'] : [],
      }),
      process.stderr,
    );
    return EXIT_FAILURE;
  }
  // A change the server refused names its resource (details.kind, details.key): its file.
  const resource = err instanceof ApiError && loaded ? locateResource(loaded, err.details?.kind, err.details?.key) : null;
  if (err instanceof ApiError && loaded && (err.issues.length || resource)) {
    const resourceAt = resource && `${resource.file}:${resource.line}:${resource.column}`;
    const lines = err.issues.map((issue) => {
      const at = locateServerIssue(loaded, issue.path);
      if (at) return `${at.file}:${at.line}:${at.column}: ${at.field ? `${at.field}: ` : ''}${issue.message}`;
      return `${resourceAt ? `${resourceAt}: ` : ''}${flagLabel(issue.path)}: ${issue.message}`;
    });
    if (resourceAt && !err.issues.length) lines.push(`${resourceAt}: ${String(err.details?.action ?? 'change')} ${String(err.details?.kind)} ${shownName(String(err.details?.key))}`);
    // The server's messages quote names from the files: escaped, as every name printed here.
    await show(
      h(StatusLine, {
        kind: 'error',
        message: escapeControls(redactSecrets(`${err.code} (HTTP ${err.status}): ${err.message}`, secrets)),
        lines: lines.map((l) => escapeControls(redactSecrets(l, secrets))),
        hints: resource ? ['A deployment is applied in one transaction: nothing of it was applied.'] : [],
      }),
      process.stderr,
    );
    return EXIT_FAILURE;
  }
  if (err instanceof ApiError) return reportError(new ApiError(err.status, err.code, escapeControls(redactSecrets(err.message, secrets)), err.details), {}, (e) => HINTS[e.code]);
  return reportError(err);
}

// ---------------------------------------------------------------- shared

function warnUnsetSecrets(loaded: LoadedProject): Promise<void> | void {
  const unset = [...loaded.secrets.unset].sort();
  if (!unset.length) return;
  return show(
    h(StatusLine, {
      kind: 'info',
      message: `${plural(unset.length, 'secret reference')} without a value in the environment, sent as ${unset.length === 1 ? 'a reference' : 'references'} (the server keeps the value it has): ${unset.join(', ')}`,
    }),
    process.stderr,
  );
}

async function requestPlan(client: ApiClient, loaded: LoadedProject, prune: boolean): Promise<Plan> {
  const { plan } = await client.post<{ plan: Plan }>('/v1/project/plan', { auth: 'bearer', body: { project: loaded.project, prune } });
  return plan;
}

/** `value` with every secret value filled in from the environment shown as `(secret)`. */
function redactedCopy<T>(value: T, secrets: ReadonlySet<string>): T {
  const hide = (v: unknown): unknown => {
    if (typeof v === 'string') return redactSecrets(v, secrets);
    if (Array.isArray(v)) return v.map(hide);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, hide(x)]));
    return v;
  };
  return hide(value) as T;
}

const SIGN_COLOR: Record<string, string> = { '+': 'green', '~': 'yellow', '-': 'red' };

function PlanView({ plan, prune, secrets }: { plan: Plan; prune: boolean; secrets: ReadonlySet<string> }) {
  const lines = planLines(plan, secrets);
  const note = untrackedNote(plan, prune);
  const secretLine = secretsNote(plan);
  const line = (l: PlanLine, i: number) =>
    h(Text, { key: i }, l.kind === 'field' ? '    ' : '', h(Text, { color: SIGN_COLOR[l.sign], bold: l.kind !== 'field' }, l.sign), ` ${l.text}`);
  return h(
    Box,
    { flexDirection: 'column', flexShrink: 0 },
    ...lines.map(line),
    lines.length ? h(Text, { key: 'gap' }, ' ') : null,
    h(Text, { key: 'summary', bold: true }, planSummary(plan)),
    note ? h(Text, { key: 'untracked', dimColor: true }, note) : null,
    secretLine ? h(Text, { key: 'secrets', dimColor: true }, secretLine) : null,
  );
}

const showPlan = (plan: Plan, prune: boolean, loaded: LoadedProject) => show(h(PlanView, { plan, prune, secrets: loaded.secrets.values }));

// ---------------------------------------------------------------- export

interface ExportFlags {
  dir: string;
  force?: boolean;
}

async function exportProject(flags: ExportFlags, command: Command): Promise<number | void> {
  const client = commandContext(command).withApiKey();
  const dir = path.resolve(flags.dir);
  // Checked before anything is read, removed or written: through a link, --force would empty (and
  // the export fill) a folder outside this one.
  const links = await managedLinks(dir);
  if (links.length) {
    throw new CliError(
      `${links.map(shownName).join(', ')} ${links.length === 1 ? 'is a symbolic link' : 'are symbolic links'} in ${flags.dir}: liya export writes and deletes nothing through links`,
      ['Replace the link with a real folder or file, or export into another folder: --dir <folder>.'],
      EXIT_FAILURE,
    );
  }
  const existing = (await existingProjectFiles(dir)).map(escapeControls);
  if (existing.length && !flags.force) {
    throw new CliError(`${flags.dir} already holds project files (${plural(existing.length, 'file')}: ${existing.slice(0, 3).join(', ')}${existing.length > 3 ? ', …' : ''})`, [
      `Replace them with --force: it first removes ${[...MANAGED_FOLDERS.map((f) => `${f}/`), ...MANAGED_ROOT_FILES].join(', ')}, and nothing else.`,
      'Or export into an empty folder: --dir <folder>.',
    ]);
  }
  const { project } = await withSpinner('Reading the project', () => client.get<{ project: Project }>('/v1/project', { auth: 'bearer' }));
  const document = project as unknown as ProjectDocument;
  // Values stored before the server limited nesting may be deeper than a project can be: named,
  // instead of failing to render them.
  for (const kind of KINDS) {
    for (const resource of document[KIND_LIST[kind]] ?? []) {
      const deep = tooDeepPath(resource);
      if (deep) {
        throw new CliError(`${kind} ${shownName(String(resource.key ?? ''))}: ${shownName(deep.slice(0, 6).join('.'))}… is nested deeper than ${MAX_RESOURCE_DEPTH} levels`, [
          'The server takes a project at most 100 levels deep, so this resource could not be applied from files: change or delete it on the server, then export again.',
        ], EXIT_FAILURE);
      }
    }
  }
  const files = renderProjectFiles(document);
  try {
    if (flags.force) await clearManagedFiles(dir);
    await writeProjectFiles(dir, files);
  } catch (err) {
    throw new CliError(`Cannot write the project to ${flags.dir}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, [], EXIT_FAILURE);
  }
  const counts = KINDS.map((kind) => [kind, document[KIND_LIST[kind]]?.length ?? 0] as const).filter(([, n]) => n > 0);
  const total = counts.reduce((sum, [, n]) => sum + n, 0);
  const references = [...secretReferencesOf(document)].sort();
  const others = flags.force ? (await existingProjectFiles(dir)).filter((f) => !files.some((w) => w.path === f.split(path.sep).join('/'))).map(escapeControls) : [];
  await show(
    h(StatusLine, {
      kind: others.length ? 'warning' : 'success',
      message: `Exported ${plural(total, 'resource')} to ${flags.dir} (${plural(files.length, 'file')})${counts.length ? `: ${counts.map(([k, n]) => `${n} ${k}`).join(', ')}` : ''}`,
      lines: others.length ? [`Other YAML files in the folder are read as project files too: ${others.slice(0, 5).join(', ')}${others.length > 5 ? ', …' : ''}`] : [],
      hints: [
        ...(references.length ? [`Secrets are written as references; set these variables when you run liya apply: ${references.join(', ')}`] : []),
        `Check it against the server: liya plan --dir ${flags.dir}`,
      ],
    }),
  );
}

// ---------------------------------------------------------------- plan

interface PlanFlags {
  dir: string;
  prune?: boolean;
  json?: boolean;
}

/** `liya plan`'s "there are changes" (terraform's -detailed-exitcode); every error is EXIT_FAILURE. */
const EXIT_CHANGES = 2;

/** Exit codes as terraform's -detailed-exitcode: 0 no changes, 2 changes, 1 any error (usage errors too). */
async function planProject(flags: PlanFlags, command: Command): Promise<number> {
  let loaded: LoadedProject | undefined;
  try {
    const client = commandContext(command).withApiKey();
    loaded = await loadProject(flags.dir);
    await warnUnsetSecrets(loaded);
    const current = loaded;
    const plan = await withSpinner('Planning', () => requestPlan(client, current, Boolean(flags.prune)));
    if (flags.json) printJson(redactedCopy(plan, current.secrets.values));
    else await showPlan(plan, Boolean(flags.prune), current);
    return planHasChanges(plan) ? EXIT_CHANGES : 0;
  } catch (err) {
    await reportDeployError(err, loaded);
    return EXIT_FAILURE;
  }
}

// ---------------------------------------------------------------- apply

interface ApplyFlags {
  dir: string;
  prune?: boolean;
  gate?: string[];
  minPassRate?: number;
  /** `chain`: each gate suite runs once per model of its intent's chain. */
  gateModels?: 'primary' | 'chain';
  yes?: boolean;
  junit?: string;
}

async function confirm(url: string): Promise<boolean> {
  const prompt = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = await prompt.question(`\nApply these changes to ${url}? Only "yes" is accepted: `);
    return answer.trim() === 'yes';
  } finally {
    prompt.close();
  }
}

const deploymentPath = (id: string) => `/v1/deployments/${segment(id)}`;

async function loadDeployment(client: ApiClient, id: string, signal?: AbortSignal): Promise<SavedDeployment> {
  const { deployment } = await client.get<{ deployment: DeploymentDto }>(deploymentPath(id), { auth: 'bearer', signal });
  return { ...deployment, id };
}

/** The gate results an error's details carry (GATE_FAILED), when they do. */
function gateOf(err: ApiError): GateResult[] | null {
  const d = err.details ?? {};
  const gate = (d.gate ?? (d.deployment as { gate?: unknown } | undefined)?.gate) as unknown;
  return Array.isArray(gate) ? (gate as GateResult[]) : null;
}

/**
 * Publishes a gated deployment once its gate has ended: waits while the server says the runs go on.
 * The publish brings the project again: the server never stores secret values with a deployment.
 */
async function publish(client: ApiClient, initial: SavedDeployment, project: ProjectDocument): Promise<{ deployment: SavedDeployment; error?: ApiError; stopped?: 'interrupted' | 'max-wait' }> {
  let deployment = initial;
  const deadline = Date.now() + MAX_GATE_WAIT_MS;
  for (;;) {
    const followed = await followDeployment((id, signal) => loadDeployment(client, id, signal), deployment, { maxWaitMs: Math.max(0, deadline - Date.now()) });
    deployment = followed.deployment;
    if (followed.stopped) return { deployment, stopped: followed.stopped };
    try {
      const published = await client.post<{ deployment: DeploymentDto }>(`${deploymentPath(deployment.id)}/publish`, { auth: 'bearer', body: { project } });
      return { deployment: { ...published.deployment, id: deployment.id } };
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      if (err.code === 'GATE_PENDING' && Date.now() < deadline) {
        await sleep(pollIntervalMs());
        deployment = await loadDeployment(client, deployment.id);
        continue;
      }
      const latest = await loadDeployment(client, deployment.id).catch(() => deployment);
      const gate = gateOf(err);
      return { deployment: gate ? { ...latest, gate } : latest, error: err };
    }
  }
}

/** The gate runs and their cases, for the JUnit report (a run that cannot be read is reported from the gate result). */
async function gateReports(client: ApiClient, gate: GateResult[]): Promise<GateSuiteReport[]> {
  return Promise.all(
    gate.map(async (g) => {
      try {
        const { run } = await client.get<{ run: EvalRun }>(`/v1/evals/runs/${segment(g.run_id)}`, { auth: 'bearer' });
        return { gate: g, run: { run, results: await loadResults(client, g.run_id) } };
      } catch {
        return { gate: g };
      }
    }),
  );
}

async function writeJUnit(file: string, xml: string): Promise<void> {
  try {
    await mkdir(path.dirname(path.resolve(file)), { recursive: true });
    await writeFile(file, xml, 'utf8');
  } catch (err) {
    throw new CliError(`Cannot write the JUnit report to ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, [], EXIT_FAILURE);
  }
}

function outcomeOf(deployment: DeploymentDto, error: ApiError | undefined, minPassRate: number, secrets: ReadonlySet<string>) {
  const { create, update, delete: del } = deployment.plan.summary;
  const changes = `${create} created, ${update} updated, ${del} deleted`;
  if (!error && deployment.status === 'deployed' && !deployment.plan.changes.length) {
    const given = deployment.plan.secrets.length;
    return { ok: true, node: h(StatusLine, { kind: 'success', message: `No changes; ${plural(given, 'secret value')} given, written where ${given === 1 ? 'it differed' : 'they differed'} from the stored ${given === 1 ? 'one' : 'ones'} (deployment ${deployment.id})` }) };
  }
  if (!error && deployment.status === 'deployed') {
    return {
      ok: true,
      node: h(StatusLine, {
        kind: 'success',
        message: `Deployed: ${changes} (deployment ${deployment.id})`,
        lines: deployment.minted.map((m) => `Webhook URL of workflow ${shownName(m.workflow_key)}: ${escapeControls(m.webhook_url)}`),
        hints: deployment.minted.length ? ['Webhook signing secrets are not shown here; rotate a workflow\'s secret to read one.'] : [],
      }),
    };
  }
  if (!error && deployment.status === 'unchanged') return { ok: true, node: h(StatusLine, { kind: 'success', message: 'No changes: the server already matches the project.' }) };
  const gateFailed = error?.code === 'GATE_FAILED' || deployment.status === 'gate_failed';
  const failing = deployment.gate.filter((g) => g.passed !== true).map((g) => gateFailureLine(g, minPassRate));
  const reason = error ? `${error.code}: ${error.message}` : deployment.error ? `${deployment.error.code}: ${deployment.error.message}` : `the deployment is ${deployment.status}`;
  return {
    ok: false,
    node: h(StatusLine, {
      kind: 'error',
      message: escapeControls(redactSecrets(gateFailed ? `The gate failed: nothing was published; the live versions are unchanged (deployment ${deployment.id})` : `Not deployed (deployment ${deployment.id}): ${reason}`, secrets)),
      lines: gateFailed ? failing : [],
      hints: error && HINTS[error.code] && !gateFailed ? [HINTS[error.code]] : [],
    }),
  };
}

async function applyProject(flags: ApplyFlags, command: Command): Promise<number> {
  let loaded: LoadedProject | undefined;
  try {
    const ctx = commandContext(command);
    const client = ctx.withApiKey({ timeoutMs: WRITE_TIMEOUT_MS });
    loaded = await loadProject(flags.dir);
    const current = loaded;
    await warnUnsetSecrets(current);
    const prune = Boolean(flags.prune);
    const plan = await withSpinner('Planning', () => requestPlan(client, current, prune));
    await showPlan(plan, prune, current);
    // Secret values given are written even when nothing else changes (the server alone knows whether they differ).
    if (!planHasChanges(plan) && !plan.secrets.length) return 0;
    if (!flags.yes) {
      if (!process.stdin.isTTY) {
        throw new CliError('Not applied: stdin is not a terminal to confirm on', ['Pass --yes to apply without confirmation (in CI, after liya plan was reviewed).'], EXIT_FAILURE);
      }
      if (!(await confirm(ctx.url))) {
        await show(h(StatusLine, { kind: 'warning', message: 'Apply cancelled: nothing was changed.' }), process.stderr);
        return EXIT_FAILURE;
      }
    }
    // plan_digest: the server deploys exactly the plan shown (and confirmed), or refuses with DEPLOYMENT_STALE.
    const body = {
      project: current.project, prune, plan_digest: plan.digest,
      ...(flags.gate?.length ? { gate: flags.gate } : {}), ...(flags.minPassRate !== undefined ? { min_pass_rate: flags.minPassRate } : {}),
      ...(flags.gateModels ? { gate_models: flags.gateModels } : {}),
    };
    let { deployment } = await withSpinner(flags.gate?.length ? 'Starting the gate' : 'Deploying', () => client.post<{ deployment: DeploymentDto }>('/v1/deployments', { auth: 'bearer', body }));
    let error: ApiError | undefined;
    if (deployment.status === 'gating' && deployment.id) {
      const published = await publish(client, { ...deployment, id: deployment.id }, current.project);
      deployment = published.deployment;
      error = published.error;
      if (published.stopped) {
        await show(
          h(StatusLine, {
            kind: 'warning',
            message: published.stopped === 'interrupted' ? `Stopped watching: deployment ${deployment.id} is still gating; nothing is live yet` : `Deployment ${deployment.id} is still gating after an hour; nothing is live yet`,
            hints: [`Publish it once its gate has passed: POST ${deploymentPath(published.deployment.id)}/publish`],
          }),
          process.stderr,
        );
        return EXIT_FAILURE;
      }
    }
    if (flags.junit && deployment.gate.length) await writeJUnit(flags.junit, buildGateJUnit(await gateReports(client, deployment.gate)));
    const minPassRate = flags.minPassRate ?? deployment.min_pass_rate;
    const outcome = outcomeOf(deployment, error, minPassRate, current.secrets.values);
    await show(
      h(
        Stack,
        null,
        deployment.gate.length ? h(Table, { headers: GATE_HEADERS, rows: gateRows(deployment.gate), align: GATE_ALIGN }) : null,
        outcome.node,
        flags.junit && deployment.gate.length ? h(Text, { dimColor: true }, `JUnit report: ${flags.junit}`) : null,
      ),
      outcome.ok ? process.stdout : process.stderr,
    );
    return outcome.ok ? 0 : EXIT_FAILURE;
  } catch (err) {
    const code = await reportDeployError(err, loaded);
    // A usage error (bad flag value, no API key) keeps its exit code; anything else is a failure.
    return err instanceof CliError ? err.exitCode : code;
  }
}

// ---------------------------------------------------------------- commands

const dirOption = () => new Option('--dir <folder>', 'the project folder').default('.');

export function exportCommand(): Command {
  return new Command('export')
    .description(
      'Write the tenant\'s definitions as a project folder: one YAML file per resource (domains/, prompts/, collections/, intents/<domain>/, guardrails.yaml, ' +
        'workflows/, agents/, evals/datasets/ with the cases as JSON Lines, evals/suites/) and the JSON Schema of the files; secrets as ${ENV_NAME} references; needs --api-key',
    )
    .addOption(dirOption())
    .option('--force', `replace a folder's project files: first removes ${[...MANAGED_FOLDERS.map((f) => `${f}/`), ...MANAGED_ROOT_FILES].join(', ')} (nothing else)`)
    .addHelpText(
      'after',
      '\nExit codes: 0 written; 1 the request or a write failed, or a folder or file it writes (or removes) is a symbolic link; 2 the folder already holds project files (pass --force), or no API key.',
    )
    .action(action((flags: ExportFlags, command: Command) => exportProject(flags, command)));
}

export function planCommand(): Command {
  return new Command('plan')
    .description('Show what applying a project folder would change on the server: + create, ~ update (with the changed fields), - delete; needs --api-key')
    .addOption(dirOption())
    .option('--prune', 'also plan deleting what the server has and the folder does not name')
    .option('--json', 'print the plan as JSON')
    .addHelpText(
      'after',
      `
Exit codes (as terraform plan -detailed-exitcode): 0 no changes; 2 there are changes; 1 any error
(bad files, bad flags, no API key, server error). Values of \${ENV_NAME} references are read from the environment.`,
    )
    .action(async (flags: PlanFlags, command: Command) => {
      process.exitCode = await planProject(flags, command);
    });
}

export function applyCommand(): Command {
  return new Command('apply')
    .description(
      'Deploy a project folder: show the plan, ask for confirmation (or --yes), then apply it. With --gate, the named eval suites run against the new ' +
        'definitions first and nothing goes live unless every one passes; needs --api-key',
    )
    .addOption(dirOption())
    .option('--prune', 'also delete what the server has and the folder does not name')
    .option('--gate <suites>', 'eval suites (names, comma-separated) that must pass before anything is published', parseList)
    .option('--min-pass-rate <rate>', 'share of each gate suite\'s cases that must pass: 0-1 or a percentage (default 1: every case)', parsePassRate)
    .addOption(new Option('--gate-models <which>', 'primary: each gate suite runs as its intent\'s route serves it; chain: once per model of the chain (its model, then each fallback), each of which must pass').choices(['primary', 'chain']))
    .option('--yes', 'apply without asking (needed when stdin is not a terminal)')
    .option('--junit <file>', 'write the gate\'s cases as JUnit XML to this file')
    .addHelpText(
      'after',
      `
Exit codes: 0 deployed, or nothing to change; 1 not deployed (the gate failed, the server changed
since the plan, the files or the server refused it, no confirmation); 2 usage error.
Values of \${ENV_NAME} references are read from the environment; LIYA_EVAL_POLL_MS sets how often the gate is read.`,
    )
    .action(async (flags: ApplyFlags, command: Command) => {
      process.exitCode = await applyProject(flags, command);
    });
}
