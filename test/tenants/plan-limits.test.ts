// The plan limits: defaults per plan, the operator's PLAN_LIMITS overrides, and the table the operating
// guide (docs/operating.md) and the OpenAPI document show (kept equal to the code).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../server/config.js';
import { DEFAULT_PLAN_LIMITS, describePlanLimits, LIMIT_CODES, limitsForPlan, PLAN_NAMES } from '../../server/tenants/plan-limits.js';

describe('plan limits', () => {
  it('grow with the plan, and an unknown plan gets the free plan\'s', () => {
    for (let i = 1; i < PLAN_NAMES.length; i++) {
      const lower = DEFAULT_PLAN_LIMITS[PLAN_NAMES[i - 1]];
      const higher = DEFAULT_PLAN_LIMITS[PLAN_NAMES[i]];
      for (const name of ['run_steps', 'step_output_bytes', 'run_state_bytes', 'run_input_bytes', 'nesting_depth', 'mail_per_day'] as const) {
        expect(higher[name], `${PLAN_NAMES[i]}.${name}`).toBeGreaterThanOrEqual(lower[name]);
      }
    }
    expect(limitsForPlan('platinum', undefined)).toEqual(DEFAULT_PLAN_LIMITS.free);
  });

  it('PLAN_LIMITS overrides single limits of single plans, and refuses what is not a limit', () => {
    const config = loadConfig({ PLAN_LIMITS: '{"trial": {"run_steps": 20000, "mail_any_recipient": true}}' });
    expect(limitsForPlan('trial', config.PLAN_LIMITS)).toEqual({ ...DEFAULT_PLAN_LIMITS.trial, run_steps: 20000, mail_any_recipient: true });
    expect(limitsForPlan('pro', config.PLAN_LIMITS)).toEqual(DEFAULT_PLAN_LIMITS.pro);
    expect(() => loadConfig({ PLAN_LIMITS: '{"trial": {"run_stepz": 1}}' })).toThrow(/PLAN_LIMITS/);
    expect(() => loadConfig({ PLAN_LIMITS: '{"gold": {"run_steps": 1}}' })).toThrow(/PLAN_LIMITS/);
    expect(() => loadConfig({ PLAN_LIMITS: '{"trial": {"run_steps": 0}}' })).toThrow(/PLAN_LIMITS/);
  });

  it('every limit has an error code, and the operating guide lists the table the code defines', () => {
    for (const name of Object.keys(DEFAULT_PLAN_LIMITS.free)) expect(LIMIT_CODES[name as keyof typeof LIMIT_CODES], name).toMatch(/^[A-Z_]+$/);
    const guide = readFileSync(new URL('../../docs/operating.md', import.meta.url), 'utf8');
    expect(guide).toContain(describePlanLimits());
  });
});
