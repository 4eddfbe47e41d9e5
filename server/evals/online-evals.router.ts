import { z } from 'zod';
import { envelope, ok, okEmpty } from '../common/schemas.js';
import { apiKeyProcedure, router } from '../trpc.js';
import { evalRunSchema } from './eval-runs.schemas.js';
import {
  createMonitorInput, createOnlineRuleInput, monitorChangeSchema, monitorId, monitorSchema, onlineBudgetSchema, onlineRuleSchema, ruleId, setOnlineBudgetInput,
  updateMonitorInput, updateOnlineRuleInput,
} from './online-evals.schemas.js';
import {
  createMonitor, createOnlineRule, deleteMonitor, deleteOnlineRule, findMonitor, findOnlineRule, listMonitors, listOnlineRules, listWindows, monitorHistory, readOnlineBudget,
  setOnlineBudget, toMonitorDto, toRuleDto, updateMonitor, updateOnlineRule,
} from './online-evals.service.js';

const TAGS = ['Online evaluation'];
const BASE = '/v1/evals';
const ruleOut = ok(z.object({ rule: onlineRuleSchema }));
const monitorOut = ok(z.object({ monitor: monitorSchema }));
const SAMPLING = 'A run of the target is sampled when a draw at sample_rate picks it and its metadata matches the filter; it is then queued by the run\'s own final write (no added wait) and scored by the job runner with the suite\'s check, judge and custom scorer, into the rule\'s window of the UTC day (an eval run, execution_mode online). The input scored is the one the model saw (after the guardrails\' redaction), the output the one the caller got. At most daily_cap samples a day are scored. Rule changes reach every process within 5 seconds.';

// online-budget is a path of its own: a literal beside /online/{ruleId} would take that route's methods.
export const onlineEvalsRouter = router({
  readOnlineBudget: apiKeyProcedure('evals:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/online-budget`, tags: TAGS, summary: 'The monthly cap on online judging, and this month\'s spend' }, errors: ['EVALS_NOT_AVAILABLE'] })
    .input(z.object({}).optional())
    .output(ok(z.object({ budget: onlineBudgetSchema })))
    .query(async ({ ctx }) => envelope({ budget: await readOnlineBudget(ctx.em, ctx.deps, ctx.scope) })),

  setOnlineBudget: apiKeyProcedure('evals:write')
    .meta({
      openapi: {
        method: 'POST', path: `${BASE}/online-budget`, tags: TAGS, summary: 'Set the monthly cap on online judging (null: the plan\'s default)',
        description: 'Online judge calls are metered as usage kind online_judge: they count toward the plan (usage, and its judge budget for all judging) and stop at this cap, whichever comes first; samples judged after that are skipped (JUDGE_CAP_REACHED).',
      },
      errors: ['EVALS_NOT_AVAILABLE'],
    })
    .input(setOnlineBudgetInput)
    .output(ok(z.object({ budget: onlineBudgetSchema })))
    .mutation(async ({ ctx, input }) => envelope({ budget: await setOnlineBudget(ctx.em, ctx.deps, ctx.scope, input.monthly_usd) })),

  listOnlineRules: apiKeyProcedure('evals:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/online`, tags: TAGS, summary: 'Online sampling rules, newest first' } })
    .input(z.object({}).optional())
    .output(ok(z.object({ rules: z.array(onlineRuleSchema) })))
    .query(async ({ ctx }) => envelope({ rules: await listOnlineRules(ctx.em, ctx.tenantId) })),

  createOnlineRule: apiKeyProcedure('evals:write')
    .meta({
      openapi: {
        method: 'POST', path: `${BASE}/online`, tags: TAGS, summary: 'Score production runs of an intent, an agent or a workflow\'s ai_intent step with a suite\'s scorers',
        description: `${SAMPLING} Names are unique in the tenant (409 ONLINE_RULE_NAME_TAKEN); the plan caps the rules (409 ONLINE_RULE_LIMIT).`,
      },
      successStatus: 201,
      errors: ['EVALS_NOT_AVAILABLE', 'ONLINE_RULE_NAME_TAKEN', 'ONLINE_RULE_LIMIT'],
    })
    .input(createOnlineRuleInput)
    .output(ruleOut)
    .mutation(async ({ ctx, input }) => envelope({ rule: await createOnlineRule(ctx.em, ctx.scope, input) })),

  getOnlineRule: apiKeyProcedure('evals:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/online/{ruleId}`, tags: TAGS, summary: 'One online rule' }, errors: ['NOT_FOUND'] })
    .input(ruleId)
    .output(ruleOut)
    .query(async ({ ctx, input }) => envelope({ rule: toRuleDto(await findOnlineRule(ctx.em, ctx.tenantId, input.ruleId)) })),

  updateOnlineRule: apiKeyProcedure('evals:write')
    .meta({ openapi: { method: 'PATCH', path: `${BASE}/online/{ruleId}`, tags: TAGS, summary: 'Change a rule\'s rate, filter, cap, suite or name, or pause it (enabled false); the target is fixed' }, errors: ['NOT_FOUND', 'ONLINE_RULE_NAME_TAKEN'] })
    .input(updateOnlineRuleInput)
    .output(ruleOut)
    .mutation(async ({ ctx, input }) => envelope({ rule: await updateOnlineRule(ctx.em, ctx.tenantId, input) })),

  deleteOnlineRule: apiKeyProcedure('evals:write')
    .meta({ openapi: { method: 'DELETE', path: `${BASE}/online/{ruleId}`, tags: TAGS, summary: 'Delete a rule with its monitors and queued samples (its windows stay, as runs)' }, errors: ['NOT_FOUND'] })
    .input(ruleId)
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await deleteOnlineRule(ctx.em, ctx.tenantId, input.ruleId);
      return { success: true as const };
    }),

  listOnlineWindows: apiKeyProcedure('evals:read')
    .meta({
      openapi: {
        method: 'GET', path: `${BASE}/online/{ruleId}/windows`, tags: TAGS, summary: 'The rule\'s live windows, one eval run per UTC day, newest first (the last 90)',
        description: 'A window is an eval run like any other: its results (GET /v1/evals/runs/{id}/results, each with its source run) and its comparison with a suite run or another window (GET /v1/evals/runs/{id}/compare) use the run routes.',
      },
      errors: ['NOT_FOUND'],
    })
    .input(ruleId)
    .output(ok(z.object({ windows: z.array(evalRunSchema) })))
    .query(async ({ ctx, input }) => envelope({ windows: await listWindows(ctx.em, ctx.tenantId, input.ruleId) })),

  listMonitors: apiKeyProcedure('evals:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/monitors`, tags: TAGS, summary: 'Monitors, newest first (filter by rule_id)' } })
    .input(z.object({ rule_id: z.string().max(64).optional() }))
    .output(ok(z.object({ monitors: z.array(monitorSchema) })))
    .query(async ({ ctx, input }) => envelope({ monitors: await listMonitors(ctx.em, ctx.tenantId, input.rule_id) })),

  createMonitor: apiKeyProcedure('evals:write')
    .meta({
      openapi: {
        method: 'POST', path: `${BASE}/monitors`, tags: TAGS, summary: 'Watch a rule\'s scores: a metric over a window, a threshold judged on a confidence bound',
        description: 'After each batch of the rule\'s samples is scored, the metric is taken over the window (the last window_minutes, at most the newest window_samples) with a time-uniform confidence sequence (Howard et al. 2021, polynomial stitching; valid however often it is looked at). Below min_samples nothing changes. A monitor of a drop (direction below) fires when the upper bound is under the threshold and resolves when the lower bound is back at or over it; direction above, the mirror image. Each change is kept (GET .../history), sent as the event eval.monitor.fired or eval.monitor.resolved, and counted in /metrics.',
      },
      successStatus: 201,
      errors: ['EVALS_NOT_AVAILABLE', 'MONITOR_NAME_TAKEN', 'MONITOR_LIMIT'],
    })
    .input(createMonitorInput)
    .output(monitorOut)
    .mutation(async ({ ctx, input }) => envelope({ monitor: await createMonitor(ctx.em, ctx.scope, input) })),

  getMonitor: apiKeyProcedure('evals:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/monitors/{monitorId}`, tags: TAGS, summary: 'One monitor with its state and last judgement' }, errors: ['NOT_FOUND'] })
    .input(monitorId)
    .output(monitorOut)
    .query(async ({ ctx, input }) => envelope({ monitor: toMonitorDto(await findMonitor(ctx.em, ctx.tenantId, input.monitorId)) })),

  updateMonitor: apiKeyProcedure('evals:write')
    .meta({ openapi: { method: 'PATCH', path: `${BASE}/monitors/{monitorId}`, tags: TAGS, summary: 'Change a monitor\'s threshold, window, minimum samples or confidence, or pause it' }, errors: ['NOT_FOUND', 'MONITOR_NAME_TAKEN'] })
    .input(updateMonitorInput)
    .output(monitorOut)
    .mutation(async ({ ctx, input }) => envelope({ monitor: await updateMonitor(ctx.em, ctx.tenantId, input) })),

  deleteMonitor: apiKeyProcedure('evals:write')
    .meta({ openapi: { method: 'DELETE', path: `${BASE}/monitors/{monitorId}`, tags: TAGS, summary: 'Delete a monitor with its history' }, errors: ['NOT_FOUND'] })
    .input(monitorId)
    .output(okEmpty)
    .mutation(async ({ ctx, input }) => {
      await deleteMonitor(ctx.em, ctx.tenantId, input.monitorId);
      return { success: true as const };
    }),

  monitorHistory: apiKeyProcedure('evals:read')
    .meta({ openapi: { method: 'GET', path: `${BASE}/monitors/{monitorId}/history`, tags: TAGS, summary: 'The monitor\'s state changes, newest first (the last 200), with the value and bound each was decided on' }, errors: ['NOT_FOUND'] })
    .input(monitorId)
    .output(ok(z.object({ changes: z.array(monitorChangeSchema) })))
    .query(async ({ ctx, input }) => envelope({ changes: await monitorHistory(ctx.em, ctx.tenantId, input.monitorId) })),
});
