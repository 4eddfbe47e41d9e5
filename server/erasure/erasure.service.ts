// Erasing one end user of a tenant (GDPR Art. 17) by the user_id the API was called with. Every
// feature deletes or anonymises its own rows (its *-erasure module); this one decides the order,
// the batches and the receipt.
//
// Batches: a person may have very many rows (a tenant that calls every run with one user_id), so
// the work goes in short transactions of at most BATCH sessions or runs each, never one long one
// holding locks live traffic waits on. Each batch takes whole units — a session with its messages
// and the cached answers derived from them; a run with its steps, approvals, keys and the runs it
// started — so an erasure interrupted anywhere leaves no half of anything, and running it again
// finishes it (the receipt then counts what that run removed).
//
// Runs executing right now refuse the erasure (409 ERASURE_RUNS_IN_FLIGHT): an agent run writes
// its steps as it goes, and would leave a trace behind of a run deleted under it. They end within
// the plan's wall time; the caller tries again.
import { createHash, randomUUID } from 'node:crypto';
import type { EntityManager } from '../../db/orm.js';
import type { Actor } from '../actor.js';
import { countUserAgentRunsInFlight, deleteAgentConversations, findNamedAgentSessions, forgetUserMemory, listAgentRunIds, takeUserAgentSessions } from '../agents/agent-erasure.js';
import { anonymiseAuditMentions } from '../audit/anonymise-audit-entries.js';
import { recordAudit } from '../audit/audit.service.js';
import { mentionPatterns } from '../common/mentions.js';
import { AppError, notFound } from '../errors.js';
import { anonymiseEvalResults, deleteUserEvalCases, listUserEvalResults } from '../evals/eval-erasure.js';
import { forgetCachedAnswers } from '../intents/forget-cached-answers.js';
import { forgetEventsAbout } from '../events/event-log.service.js';
import { forgetTenantMailAbout } from '../mail/forget-mail.js';
import { deleteRunSteps, listIdsNamedBySteps } from '../runs/run-step-erasure.js';
import { forgetOnlineSamplesOf } from '../runs/online-sample-erasure.js';
import { deleteUserSessions, takeUserSessions } from '../sessions/session-erasure.js';
import { findTenant } from '../tenants/tenants.service.js';
import { countUserWorkflowRunsInFlight, deleteWorkflowRuns, findNamedWorkflowRuns, forgetStateAbout, takeUserWorkflowRuns } from '../workflows/workflow-erasure.js';
import type { ErasureAnonymised, ErasureDeleted, ErasureReceipt } from './erasure.schemas.js';

/** Sessions, or root runs, per transaction. */
const BATCH = 100;
/** Eval results anonymised per statement. */
const RESULTS_PER_STATEMENT = 1000;
/** Levels of runs started by runs followed (the plans' nesting_depth is far below). */
const MAX_NESTING = 10;

/** `sha256:<hex>` of `<tenant_id>:<user_id>`: the person, named without their id. */
export const erasureSubject = (tenantId: string, userId: string) => `sha256:${createHash('sha256').update(`${tenantId}:${userId}`).digest('hex')}`;

const emptyDeleted = (): ErasureDeleted => ({
  sessions: 0, session_messages: 0, intent_cache: 0, agent_sessions: 0, agent_runs: 0, agent_messages: 0, agent_user_memory: 0,
  workflow_runs: 0, workflow_approvals: 0, idempotency_keys: 0, run_steps: 0, workflow_state: 0, eval_cases: 0, online_eval_samples: 0, outbox_messages: 0, events: 0,
});

/** Runs `batch` in its own transaction until it reports it took less than a full batch. */
async function inBatches(em: EntityManager, batch: (tx: EntityManager) => Promise<boolean>): Promise<void> {
  // A batch that was not full took everything there was when it read: later writes are not chased.
  while (await em.transactional(batch));
}

/** The end user's intent sessions with their transcripts and the cached answers derived from them. */
function eraseIntentSessions(em: EntityManager, tenantId: string, userId: string, deleted: ErasureDeleted) {
  return inBatches(em, async (tx) => {
    const batch = await takeUserSessions(tx, tenantId, userId, BATCH);
    if (!batch.ids.length) return false;
    // Before the messages go: they are how the cache entries are found.
    deleted.intent_cache += await forgetCachedAnswers(tx, tenantId, batch.messages);
    const removed = await deleteUserSessions(tx, tenantId, batch.ids);
    deleted.sessions += removed.sessions;
    deleted.session_messages += removed.messages;
    return batch.ids.length === BATCH;
  });
}

interface RunTree {
  workflowRuns: Set<string>;
  agentSessions: Set<string>;
  agentRuns: Set<string>;
}

/**
 * The runs `roots` started, level by level: a step's output names the run (and agent session) it
 * started, as an agent's workflow tool and a workflow's ai_agent step answer them. Those runs were
 * given the person's data without their user_id (a nested agent session belongs to the workflow).
 */
async function collectRunTree(tx: EntityManager, tenantId: string, roots: { workflowRuns: string[]; agentSessions: string[] }): Promise<RunTree> {
  const tree: RunTree = { workflowRuns: new Set(roots.workflowRuns), agentSessions: new Set(roots.agentSessions), agentRuns: new Set() };
  let workflowLevel = roots.workflowRuns;
  let agentLevel = await listAgentRunIds(tx, tenantId, roots.agentSessions);
  agentLevel.forEach((id) => tree.agentRuns.add(id));
  for (let depth = 0; depth < MAX_NESTING && (workflowLevel.length || agentLevel.length); depth++) {
    const named = [...(await listIdsNamedBySteps(tx, tenantId, 'workflow', workflowLevel)), ...(await listIdsNamedBySteps(tx, tenantId, 'agent', agentLevel))];
    const unseen = [...new Set(named)].filter((id) => !tree.workflowRuns.has(id) && !tree.agentSessions.has(id) && !tree.agentRuns.has(id));
    workflowLevel = (await findNamedWorkflowRuns(tx, tenantId, unseen)).filter((id) => !tree.workflowRuns.has(id));
    const sessions = (await findNamedAgentSessions(tx, tenantId, unseen)).filter((id) => !tree.agentSessions.has(id));
    agentLevel = (await listAgentRunIds(tx, tenantId, sessions)).filter((id) => !tree.agentRuns.has(id));
    workflowLevel.forEach((id) => tree.workflowRuns.add(id));
    sessions.forEach((id) => tree.agentSessions.add(id));
    agentLevel.forEach((id) => tree.agentRuns.add(id));
  }
  return tree;
}

/** The end user's workflow runs and agent conversations, each with the runs it started, and their traces. */
function eraseRuns(em: EntityManager, tenantId: string, userId: string, deleted: ErasureDeleted) {
  return inBatches(em, async (tx) => {
    const roots = { workflowRuns: await takeUserWorkflowRuns(tx, tenantId, userId, BATCH), agentSessions: await takeUserAgentSessions(tx, tenantId, userId, BATCH) };
    if (!roots.workflowRuns.length && !roots.agentSessions.length) return false;
    const tree = await collectRunTree(tx, tenantId, roots);
    // The steps first, by their own statements, so they are counted (and none is left of a run).
    deleted.run_steps += await deleteRunSteps(tx, tenantId, 'workflow', [...tree.workflowRuns]);
    deleted.run_steps += await deleteRunSteps(tx, tenantId, 'agent', [...tree.agentRuns]);
    const workflows = await deleteWorkflowRuns(tx, tenantId, [...tree.workflowRuns]);
    deleted.workflow_runs += workflows.runs;
    deleted.workflow_approvals += workflows.approvals;
    deleted.idempotency_keys += workflows.keys;
    const agents = await deleteAgentConversations(tx, tenantId, [...tree.agentSessions]);
    deleted.agent_sessions += agents.sessions;
    deleted.agent_runs += agents.runs;
    deleted.agent_messages += agents.messages;
    return roots.workflowRuns.length === BATCH || roots.agentSessions.length === BATCH;
  });
}

/**
 * Erases the end user `userId` of the tenant: deletes their sessions and transcripts, agent
 * conversations and memory, workflow runs whose input names them (and the runs those started),
 * the cached answers derived from their inputs, saved values and mail that name them, their
 * eval cases and their runs queued for online evaluation; anonymises eval results and audit entries that name them. Records the receipt in the
 * tenant's audit log (`data.erase`, target the subject hash) and answers it. Nothing of the person
 * is in the receipt or the entry; a user_id with nothing stored gets a receipt of zeros.
 */
export async function eraseEndUser(em: EntityManager, tenantId: string, actor: Actor, userId: string): Promise<ErasureReceipt> {
  const requestedAt = new Date();
  const running = { agent_runs: await countUserAgentRunsInFlight(em, tenantId, userId), workflow_runs: await countUserWorkflowRunsInFlight(em, tenantId, userId) };
  if (running.agent_runs + running.workflow_runs > 0) {
    throw new AppError('ERASURE_RUNS_IN_FLIGHT', 'Runs of this end user are executing now; erase them once they end (try again shortly)', { running });
  }
  const deleted = emptyDeleted();
  const anonymised: ErasureAnonymised = { eval_results: 0, audit_log: 0 };
  await eraseIntentSessions(em, tenantId, userId, deleted);
  await eraseRuns(em, tenantId, userId, deleted);

  const erasureId = randomUUID();
  const subject = erasureSubject(tenantId, userId);
  const patterns = mentionPatterns(userId);
  return em.transactional(async (tx) => {
    deleted.agent_user_memory = await forgetUserMemory(tx, tenantId, userId);
    deleted.workflow_state = await forgetStateAbout(tx, tenantId, patterns);
    deleted.eval_cases = await deleteUserEvalCases(tx, tenantId, userId);
    // Queued and not yet scored: once scored, a sample is an eval result (anonymised below).
    deleted.online_eval_samples = await forgetOnlineSamplesOf(tx, tenantId, userId);
    const results = await listUserEvalResults(tx, tenantId, userId);
    for (let i = 0; i < results.length; i += RESULTS_PER_STATEMENT) {
      anonymised.eval_results += await anonymiseEvalResults(tx, tenantId, results.slice(i, i + RESULTS_PER_STATEMENT));
    }
    deleted.outbox_messages = await forgetTenantMailAbout(tx, tenantId, patterns);
    deleted.events = await forgetEventsAbout(tx, tenantId, patterns);
    anonymised.audit_log = await anonymiseAuditMentions(tx, tenantId, userId);
    const receipt: ErasureReceipt = {
      erasure_id: erasureId,
      subject,
      requested_at: requestedAt.toISOString(),
      completed_at: new Date().toISOString(),
      deleted,
      anonymised,
    };
    // Written with the last batch, so a receipt in the log means the erasure completed.
    const { erasure_id, requested_at, completed_at } = receipt;
    recordAudit(tx, tenantId, actor, { action: 'data.erase', targetType: 'person', targetId: subject, details: { erasure_id, requested_at, completed_at, deleted, anonymised } });
    return receipt;
  });
}

/** eraseEndUser for a tenant named by id (the admin API): 404 when there is no such tenant. */
export async function eraseTenantEndUser(em: EntityManager, tenantId: string, actor: Actor, userId: string): Promise<ErasureReceipt> {
  if (!(await findTenant(em, tenantId))) throw notFound('Tenant');
  return eraseEndUser(em, tenantId, actor, userId);
}
