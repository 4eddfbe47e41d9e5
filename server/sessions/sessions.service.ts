import { randomUUID } from 'node:crypto';
import type { EntityManager } from '../../db/orm.js';
import { pageOfRows, pageRequestOf, type HistoryList, type HistoryPageQuery } from '../common/pagination.js';
import { isoRequired, isUuid } from '../common/schemas.js';
import { AppError, notFound } from '../errors.js';
import {
  countTenantSessions, findTenantSession, listLatestSessionMessages, listSessionMessages, listTenantSessions, type SessionMessageRow, type SessionRow,
} from './store/sessions.js';


const HISTORY_MESSAGES = 20;

export function toSessionSummary(s: SessionRow) {
  return {
    sessionId: s.id,
    userId: s.userId,
    domain: s.domain,
    intent: s.intent ?? null,
    status: s.status,
    messageCount: s.messageCount,
    tokensUsed: s.tokensUsed,
    costUsd: Number(s.costUsd).toFixed(6),
    lastActivityAt: isoRequired(s.lastActivityAt),
    createdAt: isoRequired(s.createdAt),
  };
}

const toMessage = (m: SessionMessageRow) => ({
  id: m.id,
  role: m.role,
  intent: m.intent ?? null,
  content: m.content,
  model: m.model ?? null,
  tokens: m.tokens,
  costUsd: Number(m.costUsd).toFixed(6),
  latencyMs: m.latencyMs,
  cached: m.cached,
  createdAt: isoRequired(m.createdAt),
});

/** A session a run writes to: an existing row, or a new one inserted with the run's first turn. */
export interface RunSession {
  id: string;
  tenantId: string;
  userId: string;
  domain: string;
  intent: string;
  isNew: boolean;
}

/**
 * Continues `sessionId` (same tenant, same end user, still active) or prepares a new session (its
 * row is written with the first turn, in the run's one transaction). An unknown or foreign id is
 * 404; an expired session is 409 SESSION_EXPIRED.
 */
export async function openSession(
  em: EntityManager,
  tenantId: string,
  request: { sessionId?: string; userId: string; domain: string; intent: string },
  ttlSeconds: number,
): Promise<RunSession> {
  if (request.sessionId) {
    const session = isUuid(request.sessionId) ? await findTenantSession(em, tenantId, request.sessionId) : null;
    if (!session || session.userId !== request.userId) throw notFound('Session');
    const idle = Date.now() - session.lastActivityAt.getTime() > ttlSeconds * 1000;
    if (session.status === 'expired' || (session.status === 'active' && idle)) {
      throw new AppError('SESSION_EXPIRED', 'The session expired after inactivity; start a new one by omitting session_id', { session_id: session.id });
    }
    return { id: session.id, tenantId, userId: session.userId, domain: session.domain, intent: request.intent, isNew: false };
  }
  return { id: randomUUID(), tenantId, userId: request.userId, domain: request.domain, intent: request.intent, isNew: true };
}

function describeTurn(message: SessionMessageRow): string {
  const content = message.content as Record<string, unknown> | string | null;
  if (typeof content === 'string') return content;
  if (content && typeof content === 'object') {
    if (message.role === 'user' && typeof content.message === 'string') return content.message;
    if (message.role === 'assistant' && typeof content.reply === 'string') return content.reply;
  }
  return JSON.stringify(content);
}

/** The last turns as text (`User: ...` / `Assistant: ...`), oldest first. */
export async function renderHistory(em: EntityManager, session: RunSession): Promise<string> {
  if (session.isNew) return '';
  const messages = await listLatestSessionMessages(em, session.id, HISTORY_MESSAGES);
  return messages
    .reverse()
    .map((m) => `${m.role === 'user' ? 'User' : 'Assistant'}: ${describeTurn(m)}`)
    .join('\n');
}

export interface Turn {
  intent: string;
  userContent: unknown;
  assistantContent: unknown;
  model: string;
  tokens: number;
  costUsd: number;
  latencyMs: number;
  cached: boolean;
}

const SESSIONS_LIST: HistoryList = { name: 'sessions', key: 'time' };

export async function listSessions(em: EntityManager, tenantId: string, filter: { status?: SessionRow['status']; domain?: string }, query: HistoryPageQuery) {
  const request = pageRequestOf(SESSIONS_LIST, query);
  const rows = await listTenantSessions(em, tenantId, filter, request);
  const page = await pageOfRows(SESSIONS_LIST, request, rows, (r) => ({ key: r.cursorKey, id: r.session.id }), (cap) => countTenantSessions(em, tenantId, filter, cap));
  return { sessions: page.items.map((r) => toSessionSummary(r.session)), pagination: page.pagination };
}

export async function getSessionWithMessages(em: EntityManager, tenantId: string, sessionId: string) {
  const session = isUuid(sessionId) ? await findTenantSession(em, tenantId, sessionId) : null;
  if (!session) throw notFound('Session');
  const messages = await listSessionMessages(em, session);
  return { session: toSessionSummary(session), messages: messages.map(toMessage) };
}
