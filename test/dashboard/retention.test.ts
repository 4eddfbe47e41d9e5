// GET and PATCH /dashboard/retention: each kind's days within the plan's bounds, roles, validation,
// the audit entry, and the operator's RETENTION_DAYS and HIRING_RETENTION_FLOOR_DAYS.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.js';
import { effectiveRetention, HISTORY_KINDS, HISTORY_POLICY, longestRetentionDays, retentionForPlan } from '../../server/retention/retention-policy.js';
import { bearer } from '../support/client.js';
import { expectError } from '../support/expect-error.js';
import { signupTenant, uniqueEmail, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let owner: SignedUpTenant;

beforeAll(async () => {
  t = await startTestServer({ RETENTION_DAYS: '{"trial": {"workflow_runs": 45}}' });
  owner = await signupTenant(t.api);
});
afterAll(() => t?.close());

const auth = (token: string) => ({ headers: bearer(token) });
const kindOf = (body: any, kind: string) => body.data.kinds.find((k: { kind: string }) => k.kind === kind);

async function member(role: 'admin' | 'developer' | 'viewer') {
  const email = uniqueEmail(role);
  const invited = await t.api.post('/dashboard/users', { email, role, password: 'member password 1' }, auth(owner.token));
  expect(invited.status, invited.text).toBe(201);
  const login = await t.api.post('/auth/login', { email, password: 'member password 1' });
  return login.body.data.token as string;
}

describe('GET /dashboard/retention', () => {
  it('lists every kind with the plan\'s days (the operator\'s override applied), its minimum and the hiring floor, to any member', async () => {
    const viewer = await member('viewer');
    const res = await t.api.get('/dashboard/retention', auth(viewer));
    expect(res.status, res.text).toBe(200);
    expect(res.body.data.plan).toBe('trial');
    expect(res.body.data.hiring_floor_days).toBe(183);
    expect(res.body.data.kinds.map((k: { kind: string }) => k.kind)).toEqual([...HISTORY_KINDS]);
    expect(kindOf(res.body, 'workflow_runs')).toEqual({
      kind: 'workflow_runs', description: HISTORY_POLICY.workflow_runs.description, days: 45, plan_days: 45, min_days: 1, custom: false, hiring_floor_days: null,
    });
    expect(kindOf(res.body, 'sessions')).toMatchObject({ days: 30, plan_days: 30, hiring_floor_days: 183 });
    expect(kindOf(res.body, 'audit_log')).toMatchObject({ days: 365, plan_days: 365, min_days: 365 });
  });

  it('needs a dashboard token', async () => {
    expectError(await t.api.get('/dashboard/retention'), 401, 'UNAUTHORIZED');
  });
});

describe('PATCH /dashboard/retention', () => {
  it('sets days within the bounds, clears them with null, and records the change in the audit log', async () => {
    const admin = await member('admin');
    const set = await t.api.patch('/dashboard/retention', { workflow_runs: 7, sessions: 30 }, auth(admin));
    expect(set.status, set.text).toBe(200);
    expect(kindOf(set.body, 'workflow_runs')).toMatchObject({ days: 7, plan_days: 45, custom: true });
    expect(kindOf(set.body, 'sessions')).toMatchObject({ days: 30, custom: true });
    expect(kindOf(set.body, 'eval_runs')).toMatchObject({ custom: false });
    expect(kindOf((await t.api.get('/dashboard/retention', auth(owner.token))).body, 'workflow_runs')).toMatchObject({ days: 7, custom: true });

    const cleared = await t.api.patch('/dashboard/retention', { workflow_runs: null }, auth(owner.token));
    expect(kindOf(cleared.body, 'workflow_runs')).toMatchObject({ days: 45, custom: false });
    expect(kindOf(cleared.body, 'sessions')).toMatchObject({ days: 30, custom: true });

    const audit = await t.api.get('/dashboard/audit-log?action=retention.updated', auth(owner.token));
    const entries = audit.body.data.entries;
    expect(entries).toHaveLength(2);
    expect(entries[1].details).toEqual({ workflow_runs: { from: null, to: 7 }, sessions: { from: null, to: 30 } });
    expect(entries[0].details).toEqual({ workflow_runs: { from: 7, to: null } });
    // Nothing changed, nothing recorded.
    await t.api.patch('/dashboard/retention', { sessions: 30 }, auth(owner.token));
    expect((await t.api.get('/dashboard/audit-log?action=retention.updated', auth(owner.token))).body.data.entries).toHaveLength(2);
  });

  it('refuses days out of the plan\'s bounds with 400 INVALID_INPUT naming each bound, and changes nothing', async () => {
    const res = await t.api.patch('/dashboard/retention', { workflow_runs: 46, audit_log: 100, eval_runs: 20 }, auth(owner.token));
    const error = expectError(res, 400, 'INVALID_INPUT');
    expect(error.details.issues).toEqual([
      { path: 'workflow_runs', message: 'between 1 and 45 days on the trial plan', code: 'out_of_bounds' },
      { path: 'audit_log', message: 'between 365 and 365 days on the trial plan', code: 'out_of_bounds' },
    ]);
    expect(kindOf((await t.api.get('/dashboard/retention', auth(owner.token))).body, 'eval_runs')).toMatchObject({ custom: false });
    for (const body of [{ usage_events: 0 }, { usage_events: -3 }, { usage_events: 1.5 }, { usage_events: 'ten' }, { usage_events: 40_000 }]) {
      const bad = expectError(await t.api.patch('/dashboard/retention', body, auth(owner.token)), 400, 'INVALID_INPUT');
      expect(bad.details.issues.map((i: { path: string }) => i.path), JSON.stringify(body)).toEqual(['usage_events']);
    }
  });

  it('is for owners and admins only', async () => {
    for (const role of ['developer', 'viewer'] as const) {
      expectError(await t.api.patch('/dashboard/retention', { sessions: 3 }, auth(await member(role))), 403, 'FORBIDDEN');
    }
    expectError(await t.api.patch('/dashboard/retention', { sessions: 3 }), 401, 'UNAUTHORIZED');
  });

  it('a setting made on a larger plan keeps within a smaller one\'s days', async () => {
    const other = await signupTenant(t.api);
    await t.sql(`update tenants set plan = 'enterprise' where id = $1`, [other.tenantId]);
    const set = await t.api.patch('/dashboard/retention', { sessions: 300 }, auth(other.token));
    expect(kindOf(set.body, 'sessions')).toMatchObject({ days: 300, plan_days: 365 });
    await t.sql(`update tenants set plan = 'free' where id = $1`, [other.tenantId]);
    const after = await t.api.get('/dashboard/retention', auth(other.token));
    expect(kindOf(after.body, 'sessions')).toMatchObject({ days: 30, plan_days: 30, custom: true });
  });
});

describe('the retention table and its operator settings', () => {
  it('every plan keeps each kind at least its minimum, larger plans no less than smaller ones', () => {
    const plans = ['free', 'trial', 'starter', 'pro', 'enterprise'] as const;
    for (const kind of HISTORY_KINDS) {
      const days = plans.map((plan) => HISTORY_POLICY[kind].days[plan]);
      expect(days.every((d) => d >= HISTORY_POLICY[kind].minDays), kind).toBe(true);
      expect([...days].sort((x, y) => x - y), kind).toEqual(days);
    }
    expect(HISTORY_POLICY.audit_log.minDays).toBeGreaterThanOrEqual(365);
  });

  it('RETENTION_DAYS overrides single kinds of single plans and refuses what is not a kind or below its minimum', () => {
    const config = loadConfig({ RETENTION_DAYS: '{"pro": {"workflow_runs": 400}}' });
    expect(retentionForPlan('pro', config.RETENTION_DAYS)).toMatchObject({ workflow_runs: 400, sessions: 180 });
    expect(retentionForPlan('starter', config.RETENTION_DAYS).workflow_runs).toBe(90);
    expect(retentionForPlan('unknown-plan', undefined)).toEqual(retentionForPlan('free', undefined));
    expect(longestRetentionDays('workflow_runs', config.RETENTION_DAYS, 183)).toBe(400);
    expect(longestRetentionDays('usage_events', undefined, 500)).toBe(500);
    expect(longestRetentionDays('workflow_runs', undefined, 500)).toBe(365);
    expect(() => loadConfig({ RETENTION_DAYS: '{"pro": {"workflow_runz": 1}}' })).toThrow(/RETENTION_DAYS/);
    expect(() => loadConfig({ RETENTION_DAYS: '{"gold": {"workflow_runs": 1}}' })).toThrow(/RETENTION_DAYS/);
    expect(() => loadConfig({ RETENTION_DAYS: '{"pro": {"audit_log": 30}}' })).toThrow(/RETENTION_DAYS/);
    expect(() => loadConfig({ HIRING_RETENTION_FLOOR_DAYS: '-1' })).toThrow(/HIRING_RETENTION_FLOOR_DAYS/);
    expect(loadConfig({}).HIRING_RETENTION_FLOOR_DAYS).toBe(183);
  });

  it('a tenant\'s own days stay within the kind\'s minimum and the plan\'s days', () => {
    const plan = retentionForPlan('starter', undefined);
    expect(effectiveRetention(plan, { sessions: 10, audit_log: 5, workflow_runs: 9999 })).toMatchObject({ sessions: 10, audit_log: 365, workflow_runs: 90 });
  });
});
