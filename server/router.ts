import { adminRouter } from './admin/admin.router.js';
import { agentsRouter } from './agents/agents.router.js';
import { workflowsRouter } from './workflows/workflows.router.js';
import { eventsRouter } from './workflows/events.router.js';
import { evalsRouter } from './evals/evals.router.js';
import { onlineEvalsRouter } from './evals/online-evals.router.js';
import { authRouter } from './auth/auth.router.js';
import { collectionsRouter } from './collections/collections.router.js';
import { dashboardCollectionsRouter } from './collections/dashboard-collections.router.js';
import { dashboardRouter } from './dashboard/dashboard.router.js';
import { dashboardDocumentsRouter } from './documents/dashboard-documents.router.js';
import { documentsRouter } from './documents/documents.router.js';
import { guardrailsRouter } from './guardrails/guardrails.router.js';
import { customDomainsRouter } from './domains/custom-domains.router.js';
import { customIntentsRouter, intentVersionFeedRouter } from './intents/custom-intents.router.js';
import { intentsRouter } from './intents/intents.router.js';
import { knowledgeRouter } from './knowledge/knowledge.router.js';
import { providerKeysRouter } from './llm/provider-keys.router.js';
import { sessionsRouter } from './sessions/sessions.router.js';
import { promptsRouter } from './prompts/prompts.router.js';
import { deploysRouter } from './deploys/deploys.router.js';
import { erasureRouter } from './erasure/erasure.router.js';
import { eventSubscriptionsRouter } from './events/event-subscriptions.router.js';
import { mergeRouters, router } from './trpc.js';

// Literal paths must not be shadowed by a `{param}` sibling registered earlier: the route-walk
// test in test/http/openapi.test.ts guards this.
export const appRouter = router({
  auth: authRouter,
  dashboard: dashboardRouter,
  admin: adminRouter,
  collections: collectionsRouter,
  dashboardCollections: dashboardCollectionsRouter,
  documents: documentsRouter,
  dashboardDocuments: dashboardDocumentsRouter,
  guardrails: guardrailsRouter,
  // One group under /dashboard/custom-domains: the intents' literal feed path first, then the
  // domains, then their intents (the procedure names stay customIntents.*).
  customIntents: mergeRouters(intentVersionFeedRouter, customDomainsRouter, customIntentsRouter),
  prompts: promptsRouter,
  sessions: sessionsRouter,
  providerKeys: providerKeysRouter,
  intents: intentsRouter,
  knowledge: knowledgeRouter,
  agents: agentsRouter,
  workflows: workflowsRouter,
  events: eventsRouter,
  eventSubscriptions: eventSubscriptionsRouter,
  // Before evals: its literal /v1/evals/online and /v1/evals/monitors paths.
  onlineEvals: onlineEvalsRouter,
  evals: evalsRouter,
  deploys: deploysRouter,
  erasure: erasureRouter,
});

export type AppRouter = typeof appRouter;
