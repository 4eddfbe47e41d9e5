import { startOfNextMonth } from '../common/schemas.js';
import { AppError } from '../errors.js';
import type { MonthlyUsage } from './usage.service.js';

export interface Quotas {
  monthlyRequestQuota: number | null;
  monthlyTokenQuota: number | null;
}

/** Throws 429 QUOTA_EXCEEDED when `used` has reached a monthly quota. */
export function assertQuotaLeft(quotas: Quotas, used: MonthlyUsage): void {
  if (quotas.monthlyRequestQuota !== null && used.requests >= quotas.monthlyRequestQuota) {
    throw quotaExceeded('The monthly request quota is used up', { quota: quotas.monthlyRequestQuota, used: used.requests, kind: 'requests' });
  }
  if (quotas.monthlyTokenQuota !== null && used.tokens >= quotas.monthlyTokenQuota) {
    throw quotaExceeded('The monthly token quota is used up', { quota: quotas.monthlyTokenQuota, used: used.tokens, kind: 'tokens' });
  }
}

// Built only when a quota is used up: every run checks its quota, and dates cost more than the comparisons.
function quotaExceeded(message: string, details: { quota: number; used: number; kind: 'requests' | 'tokens' }): AppError {
  const resetsAt = startOfNextMonth().toISOString();
  const retryAfter = String(Math.max(1, Math.ceil((Date.parse(resetsAt) - Date.now()) / 1000)));
  return new AppError('QUOTA_EXCEEDED', message, { ...details, resets_at: resetsAt }, { 'Retry-After': retryAfter });
}

/** What is left after a run that used `tokens` (null where there is no quota). */
export function remainingAfter(quotas: Quotas, usedBefore: MonthlyUsage, tokens: number) {
  return {
    requests_remaining: quotas.monthlyRequestQuota === null ? null : Math.max(0, quotas.monthlyRequestQuota - usedBefore.requests - 1),
    tokens_remaining: quotas.monthlyTokenQuota === null ? null : Math.max(0, quotas.monthlyTokenQuota - usedBefore.tokens - tokens),
  };
}
