// Wire shapes of an erasure (one end user's data, by the user_id the API was called with).
import { z } from 'zod';

export const erasureInput = z.object({
  user_id: z
    .string()
    .min(1)
    .max(200)
    .describe('The end user as the API was called with them: `input.user_id` of intent runs, agent runs and workflow runs (exact, case-sensitive)'),
});

const count = (what: string) => z.number().int().describe(what);

/** What was deleted, by kind of row (every kind is listed, 0 when there was none). */
const deletedSchema = z
  .object({
    sessions: count('Intent sessions of the user'),
    session_messages: count('Their transcripts: every input and answer'),
    intent_cache: count('Cached answers derived from their inputs (found by the inputs\' cache keys, recomputed for every version of the intent, and by the answers themselves)'),
    agent_sessions: count('Agent conversations of the user, and those their runs started'),
    agent_runs: count('Runs of those conversations'),
    agent_messages: count('Their transcripts'),
    agent_user_memory: count('Preferences and memories agents kept about the user'),
    workflow_runs: count('Runs whose input\'s user_id is the user, and the runs their steps started (an agent\'s workflow tool, a workflow\'s ai_agent step)'),
    workflow_approvals: count('Approvals of those runs'),
    idempotency_keys: count('Idempotency keys that kept those runs\' answers'),
    run_steps: count('Step traces of the agent and workflow runs deleted'),
    workflow_state: count('Saved workflow values whose key or value names the user'),
    eval_cases: count('Evaluation cases whose input\'s user_id is the user (in datasets, and inline cases of runs)'),
    online_eval_samples: count('Runs of the user sampled for online evaluation and not yet scored (once scored, they are eval results)'),
    outbox_messages: count('Mail the tenant sent to or about the user (recipients, subject or body naming them)'),
    events: count('Events recorded for subscriptions whose payload names the user (an approval\'s message, say), with their deliveries'),
  })
  .meta({ id: 'ErasureDeleted' });

const anonymisedSchema = z
  .object({
    eval_results: count('Evaluation results whose input\'s user_id was the user: input, message, output, expected output, check, judge reasoning and error dropped; scores kept'),
    audit_log: count('Audit entries whose target or details named the user: those values replaced by "[erased]"'),
  })
  .meta({ id: 'ErasureAnonymised' });

export const erasureReceiptSchema = z
  .object({
    erasure_id: z.string().describe('The id of this erasure (also in the tenant\'s audit log entry `data.erase`)'),
    subject: z.string().describe('`sha256:` and the hex SHA-256 of `<tenant_id>:<user_id>`: names the person without holding the user_id'),
    requested_at: z.string(),
    completed_at: z.string(),
    deleted: deletedSchema,
    anonymised: anonymisedSchema,
  })
  .meta({ id: 'ErasureReceipt' });

export type ErasureDeleted = z.infer<typeof deletedSchema>;
export type ErasureAnonymised = z.infer<typeof anonymisedSchema>;
export type ErasureReceipt = z.infer<typeof erasureReceiptSchema>;
