// The list MikroORM is configured with (the one place that enumerates entities).
import { Agent, AgentMessage, AgentRun, AgentSession, AgentUserMemory, RunStep } from './agent.js';
import { AuditEntry } from './audit.js';
import { EvalCase, EvalDataset, EvalResult, EvalReview, EvalRun, EvalSuite } from './eval.js';
import { IdempotencyKey, Workflow, WorkflowApproval, WorkflowRun, WorkflowScheduleTick, WorkflowState, WorkflowVersion } from './workflow.js';
import { Collection, CollectionDomain } from './collection.js';
import { ApiKey, Environment, PlatformSetting, Tenant } from './tenant.js';
import { UsageCounter, UsageDaily, UsageEvent } from './usage.js';
import { EmailToken, LoginAttempt, OutboxMessage, User } from './user.js';
import { MailDayCount } from './mail.js';
import { WorkerHeartbeat } from './worker.js';
import { DeployPolicy, Deployment } from './deploy.js';
import { Document, DocumentChunk, DocumentCollection, IngestionJob } from './document.js';
import { CustomDomain, CustomIntent, IntentVersion, Prompt, PromptVersion } from './intent.js';
import { IntentCacheEntry, Session, SessionMessage, TenantProviderKey } from './session.js';
import { TenantRetention } from './retention.js';
import { PlatformAuditEntry } from './platform-audit.js';
import { ProviderBreaker } from './provider-breaker.js';
import { Event, EventDelivery, EventDeliveryAttempt, EventSubscription } from './event.js';
import { EvalMonitor, EvalMonitorChange, OnlineEvalRule, OnlineEvalSample } from './online-eval.js';

export const entities = [
  Tenant, Environment, ApiKey, PlatformSetting, User, EmailToken, OutboxMessage, MailDayCount, LoginAttempt,
  AuditEntry, UsageEvent, UsageCounter, UsageDaily, Collection, CollectionDomain, WorkerHeartbeat,
  CustomDomain, CustomIntent, IntentVersion, Prompt, PromptVersion, Session, SessionMessage, IntentCacheEntry, TenantProviderKey,
  Document, DocumentCollection, DocumentChunk, IngestionJob,
  Agent, AgentSession, AgentMessage, AgentRun, RunStep, AgentUserMemory, Workflow, WorkflowVersion, WorkflowRun, WorkflowState,
  WorkflowApproval, IdempotencyKey, WorkflowScheduleTick,
  EvalDataset, EvalCase, EvalSuite, EvalRun, EvalResult, EvalReview, Deployment, DeployPolicy, TenantRetention,
  PlatformAuditEntry, ProviderBreaker, EventSubscription, Event, EventDelivery, EventDeliveryAttempt,
  OnlineEvalRule, OnlineEvalSample, EvalMonitor, EvalMonitorChange,
];
