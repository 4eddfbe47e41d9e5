import { z } from 'zod';
import { envelope, ok } from '../common/schemas.js';
import { dashboardProcedure, publicProcedure, router } from '../trpc.js';
import {
  loginInput, loginOutput, meOutput, resetConfirmInput, resetRequestInput, signupInput, signupOutput, tokenInput, dashboardUserSchema,
} from './auth.schemas.js';
import {
  confirmPasswordReset, getMe, login, refreshToken, requestPasswordReset, resendVerification, signup, verifyEmail,
} from './auth.service.js';

const TAGS = ['Dashboard authentication'];

export const authRouter = router({
  signup: publicProcedure
    .meta({ openapi: { method: 'POST', path: '/auth/signup', tags: TAGS, summary: 'Create an account: tenant (trial plan), owner, environments and the first API key' }, successStatus: 201, errors: ['EMAIL_TAKEN'] })
    .input(signupInput)
    .output(ok(signupOutput))
    .mutation(async ({ ctx, input }) => envelope(await signup(ctx.em, ctx.deps, input))),

  login: publicProcedure
    .meta({ openapi: { method: 'POST', path: '/auth/login', tags: TAGS, summary: 'Log in with e-mail and password' }, errors: ['INVALID_CREDENTIALS', 'ACCOUNT_INACTIVE', 'RATE_LIMITED'] })
    .input(loginInput)
    .output(ok(loginOutput))
    .mutation(async ({ ctx, input }) => envelope(await login(ctx.em, ctx.deps, input, ctx.req.ip))),

  refresh: dashboardProcedure()
    .meta({ openapi: { method: 'POST', path: '/auth/refresh', tags: TAGS, summary: 'Exchange a still-valid token for a new one' } })
    .input(z.object({}).optional())
    .output(ok(z.object({ token: z.string() })))
    .mutation(async ({ ctx }) => envelope(await refreshToken(ctx.deps, ctx.user))),

  me: dashboardProcedure()
    .meta({ openapi: { method: 'GET', path: '/auth/me', tags: TAGS, summary: 'The current user and tenant (does not reissue a token)' } })
    .input(z.object({}).optional())
    .output(ok(meOutput))
    .query(async ({ ctx }) => envelope(await getMe(ctx.em, ctx.user))),

  verifyEmail: publicProcedure
    .meta({ openapi: { method: 'POST', path: '/auth/verify-email', tags: TAGS, summary: 'Confirm an e-mail address with the token from the verification mail' } })
    .input(tokenInput)
    .output(ok(z.object({ user: dashboardUserSchema })))
    .mutation(async ({ ctx, input }) => envelope(await verifyEmail(ctx.em, input.token))),

  resendVerification: dashboardProcedure()
    .meta({ openapi: { method: 'POST', path: '/auth/verify-email/resend', tags: TAGS, summary: 'Send the verification mail again (no-op when already verified)' } })
    .input(z.object({}).optional())
    .output(ok(z.object({ sent: z.boolean() })))
    .mutation(async ({ ctx }) => envelope(await resendVerification(ctx.em, ctx.deps, ctx.user))),

  requestPasswordReset: publicProcedure
    .meta({ openapi: { method: 'POST', path: '/auth/password-reset/request', tags: TAGS, summary: 'Mail a reset link; always 200, so the answer never reveals whether an account exists' } })
    .input(resetRequestInput)
    .output(ok(z.object({ requested: z.literal(true) })))
    .mutation(async ({ ctx, input }) => {
      await requestPasswordReset(ctx.em, ctx.deps, input.email);
      return envelope({ requested: true as const });
    }),

  confirmPasswordReset: publicProcedure
    .meta({ openapi: { method: 'POST', path: '/auth/password-reset/confirm', tags: TAGS, summary: 'Set a new password with a reset token; earlier tokens stop working' } })
    .input(resetConfirmInput)
    .output(ok(z.object({ reset: z.literal(true) })))
    .mutation(async ({ ctx, input }) => {
      await confirmPasswordReset(ctx.em, input);
      return envelope({ reset: true as const });
    }),
});
