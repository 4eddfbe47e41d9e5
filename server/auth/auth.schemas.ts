import { z } from 'zod';
import { ROLES } from '../../db/column-values.js';
import { tenantProfileSchema, tenantRefSchema } from '../tenants/tenants.schemas.js';

export const emailSchema = z.string().trim().toLowerCase().pipe(z.email().max(320));
export const passwordSchema = z.string().min(8, 'Passwords need at least 8 characters').max(200);

export const signupInput = z.object({
  companyName: z.string().trim().min(1).max(200),
  email: emailSchema,
  password: passwordSchema,
  fullName: z.string().trim().min(1).max(200).optional(),
});

export const loginInput = z.object({ email: emailSchema, password: z.string().min(1).max(200) });

export const userRefSchema = z.object({ id: z.string(), email: z.string(), role: z.enum(ROLES) });

export const dashboardUserSchema = z
  .object({
    id: z.string(),
    email: z.email(),
    fullName: z.string().nullable(),
    role: z.enum(ROLES),
    emailVerified: z.boolean(),
    createdAt: z.string(),
  })
  .meta({ id: 'DashboardUser' });
export type DashboardUserDto = z.infer<typeof dashboardUserSchema>;

export const signupOutput = z.object({
  token: z.string(),
  user: userRefSchema,
  tenant: tenantRefSchema,
  apiKey: z.string().describe('The production API key. Shown once: store it now.'),
});

export const loginOutput = z.object({ token: z.string(), user: userRefSchema, tenant: tenantRefSchema });
export type LoginResult = z.infer<typeof loginOutput>;

export const meOutput = z.object({ user: dashboardUserSchema, tenant: tenantProfileSchema });

export const tokenInput = z.object({ token: z.string().min(1).max(200) });
export const resetConfirmInput = z.object({ token: z.string().min(1).max(200), password: passwordSchema });
export const resetRequestInput = z.object({ email: emailSchema });
