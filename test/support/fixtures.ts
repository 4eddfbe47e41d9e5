import { randomBytes } from 'node:crypto';
import type { ApiClient } from './client.js';
import { ADMIN_SECRET } from './server.js';

export const adminHeaders = { 'x-admin-secret': ADMIN_SECRET };

export interface SignedUpTenant {
  token: string;
  apiKey: string;
  tenantId: string;
  userId: string;
  email: string;
  password: string;
}

export const uniqueEmail = (prefix = 'user') => `${prefix}-${randomBytes(5).toString('hex')}@example.com`;

/** Signs up a fresh tenant through the real API. */
export async function signupTenant(api: ApiClient, overrides: { companyName?: string; email?: string; password?: string } = {}): Promise<SignedUpTenant> {
  const email = overrides.email ?? uniqueEmail('owner');
  const password = overrides.password ?? 'correct horse battery';
  const res = await api.post('/auth/signup', { companyName: overrides.companyName ?? 'Acme Hiring', email, password });
  if (res.status !== 201) throw new Error(`signup failed: ${res.status} ${res.text}`);
  const { token, apiKey, tenant, user } = res.body.data;
  return { token, apiKey, tenantId: tenant.tenantId, userId: user.id, email, password };
}
