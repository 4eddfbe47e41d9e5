import { adminRouter } from './admin/admin.router.js';
import { authRouter } from './auth/auth.router.js';
import { collectionsRouter } from './collections/collections.router.js';
import { dashboardRouter } from './dashboard/dashboard.router.js';
import { router } from './trpc.js';

// Literal paths must not be shadowed by a `{param}` sibling registered earlier: the route-walk
// test in test/routes.test.ts guards this.
export const appRouter = router({
  auth: authRouter,
  dashboard: dashboardRouter,
  admin: adminRouter,
  collections: collectionsRouter,
});

export type AppRouter = typeof appRouter;
