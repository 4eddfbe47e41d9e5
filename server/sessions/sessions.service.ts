import { Session, SessionMessage, type ISession, type ISessionMessage } from '../../db/entities/session.js';
import type { EntityManager } from '../../db/orm.js';
import { isoRequired, isUuid } from '../common/schemas.js';
import { AppError, notFound } from '../errors.js';

const HISTORY_MESSAGES = 20;

export function toSessionSummary(s: ISession) {
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

const toMessage = (m: ISessionMessage) => ({
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

/**
 * Continues `sessionId` (same tenant, same end user, still active) or starts a new session.
 * An unknown or foreign id is 404; an expired session is 409 SESSION_EXPIRED.
 */
export async function openSession(
  em: EntityManager,
  tenantId: string,
  request: { sessionId?: string; userId: string; domain: string; intent: string },
  ttlSeconds: number,
): Promise<ISession> {
  if (request.sessionId) {
    const session = isUuid(request.sessionId) ? await em.findOne(Session, { id: request.sessionId, tenant: tenantId }) : null;
    if (!session || session.userId !== request.userId) throw notFound('Session');
    const idle = Date.now() - session.lastActivityAt.getTime() > ttlSeconds * 1000;
    if (session.status === 'expired' || (session.status === 'active' && idle)) {
      throw new AppError('SESSION_EXPIRED', 'The session expired after inactivity; start a new one by omitting session_id', { session_id: session.id });
    }
    return session;
  }
  const session = em.create(Session, { tenant: tenantId, userId: request.userId, domain: request.domain, intent: request.intent, lastActivityAt: new Date() });
  await em.flush();
  return session;
}

function describeTurn(message: ISessionMessage): string {
  const content = message.content as Record<string, unknown> | string | null;
  if (typeof content === 'string') return content;
  if (content && typeof content === 'object') {
    if (message.role === 'user' && typeof content.message === 'string') return content.message;
    if (message.role === 'assistant' && typeof content.reply === 'string') return content.reply;
  }
  return JSON.stringify(content);
}

/** The last turns as text (`User: ...` / `Assistant: ...`), oldest first. */
export async function renderHistory(em: EntityManager, session: ISession): Promise<string> {
  const messages = await em.find(SessionMessage, { session }, { orderBy: { createdAt: 'desc', role: 'desc' }, limit: HISTORY_MESSAGES });
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

/** Stores one turn (user + assistant message) and moves the session's counters. Returns the assistant message id. */
export async function appendTurn(em: EntityManager, session: ISession, turn: Turn): Promise<string> {
  return em.transactional(async (tx) => {
    const now = Date.now();
    tx.create(SessionMessage, { tenant: session.tenant, session: session.id, role: 'user', intent: turn.intent, content: turn.userContent, createdAt: new Date(now) });
    const reply = tx.create(SessionMessage, {
      tenant: session.tenant,
      session: session.id,
      role: 'assistant',
      intent: turn.intent,
      content: turn.assistantContent,
      model: turn.model,
      tokens: turn.tokens,
      costUsd: turn.costUsd.toFixed(6),
      latencyMs: turn.latencyMs,
      cached: turn.cached,
      createdAt: new Date(now + 1),
    });
    await tx.flush();
    await tx.execute(
      `update sessions set message_count = message_count + 2, tokens_used = tokens_used + ?, cost_usd = cost_usd + ?, last_activity_at = now(), intent = ? where id = ?`,
      [turn.tokens, turn.costUsd.toFixed(6), turn.intent, session.id],
    );
    return reply.id;
  });
}

export async function listSessions(
  em: EntityManager,
  tenantId: string,
  filter: { status?: ISession['status']; domain?: string },
  page: { limit: number; offset: number },
) {
  const where = { tenant: tenantId, ...(filter.status ? { status: filter.status } : {}), ...(filter.domain ? { domain: filter.domain } : {}) };
  const [sessions, total] = await em.findAndCount(Session, where, { orderBy: { lastActivityAt: 'desc', id: 'asc' }, limit: page.limit, offset: page.offset });
  return { sessions: sessions.map(toSessionSummary), pagination: { total, limit: page.limit, offset: page.offset } };
}

export async function getSessionWithMessages(em: EntityManager, tenantId: string, sessionId: string) {
  const session = isUuid(sessionId) ? await em.findOne(Session, { id: sessionId, tenant: tenantId }) : null;
  if (!session) throw notFound('Session');
  const messages = await em.find(SessionMessage, { session }, { orderBy: { createdAt: 'asc', role: 'desc' } });
  return { session: toSessionSummary(session), messages: messages.map(toMessage) };
}
