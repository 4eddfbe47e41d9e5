// The platform's own tools: time, SSRF-safe HTTP GET, mail to the agent's notify address, asking
// the user, and per-end-user memory and preferences.
import type { ChatCompletionTool } from 'openai/resources/chat/completions';
import { sendTenantMail } from '../mail/send-tenant-mail.js';
import type { AgentTool, ToolContext } from './agent-tool.types.js';
import { MEMORY_VALUE_MAX_CHARS, readUserMemory, writeUserMemory, type MemoryScope } from './agent-memory.js';

const HTTP_TEXT_MAX = 20_000;

const tool = (name: string, description: string, properties: Record<string, unknown>, required: string[] = []): ChatCompletionTool => ({
  type: 'function',
  function: { name, description, parameters: { type: 'object', properties, required } },
});

const text = (value: unknown, field: string, max: number): string => {
  if (typeof value !== 'string' || !value.trim()) throw new Error(`${field} must be a non-empty string`);
  if (value.length > max) throw new Error(`${field} is longer than ${max} characters`);
  return value;
};

// A formatter costs far more to build than to use: one per time zone, kept (zones are a small set).
const formatters = new Map<string, Intl.DateTimeFormat>();
function formatterFor(zone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(zone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-CA', { timeZone: zone, dateStyle: 'short', timeStyle: 'long', hourCycle: 'h23' });
    if (formatters.size < 1000) formatters.set(zone, formatter);
  }
  return formatter;
}

function currentTime(): AgentTool {
  return {
    name: 'current_time',
    kind: 'platform',
    spec: tool('current_time', 'The current date and time, in UTC and optionally in an IANA time zone.', {
      timezone: { type: 'string', description: 'IANA time zone, e.g. Europe/Berlin' },
    }),
    run: async (args) => {
      const now = new Date();
      const zone = typeof args.timezone === 'string' && args.timezone ? args.timezone : 'UTC';
      let local: string;
      try {
        local = formatterFor(zone).format(now);
      } catch {
        throw new Error(`unknown time zone "${zone}"`);
      }
      return { output: { utc: now.toISOString(), timezone: zone, local } };
    },
  };
}

function httpGet(ctx: ToolContext): AgentTool {
  return {
    name: 'http_get',
    kind: 'platform',
    spec: tool('http_get', 'Fetches a public web page or API over HTTP(S) GET and returns its status and text (cut to 20000 characters).', {
      url: { type: 'string', description: 'An absolute http or https URL' },
    }, ['url']),
    run: async (args, call) => {
      const url = text(args.url, 'url', 2000);
      const res = await ctx.deps.outbound.get(url, { signal: call.signal, timeoutMs: call.timeoutMs });
      const cut = res.text.length > HTTP_TEXT_MAX;
      return { output: { status: res.status, url: res.url, content_type: res.contentType, text: cut ? res.text.slice(0, HTTP_TEXT_MAX) : res.text, truncated: cut || res.truncated } };
    },
  };
}

function sendEmail(ctx: ToolContext): AgentTool {
  const to = ctx.toolsConfig.notify_email!;
  const label = ctx.toolsConfig.notify_label;
  return {
    name: 'send_email',
    kind: 'platform',
    spec: tool('send_email', `Sends an e-mail to ${label ?? 'the team'} (the agent's configured notification address).`, {
      subject: { type: 'string', description: 'At most 200 characters' },
      body: { type: 'string', description: 'Plain text, at most 20000 characters' },
    }, ['subject', 'body']),
    run: async (args) => {
      const subject = text(args.subject, 'subject', 200);
      const body = text(args.body, 'body', 20_000);
      // The tenant's plan limits hold here as in workflows; a refusal fails the call, and the model reads why.
      const sent = await sendTenantMail(ctx.em.fork(), ctx.deps, { tenantId: ctx.scope.tenantId, plan: ctx.scope.plan }, {
        to, subject: label ? `[${label}] ${subject}` : subject, body, kind: 'agent_notification',
      });
      return { output: { queued: true, to: sent.to } };
    },
  };
}

function askUser(): AgentTool {
  return {
    name: 'ask_user',
    kind: 'platform',
    spec: tool('ask_user', 'Asks the user a question and ends this turn; their next message is the answer.', {
      question: { type: 'string', description: 'The question, as the user will read it' },
    }, ['question']),
    run: async (args) => {
      const question = text(args.question, 'question', 4000);
      return { output: { asked: true }, askUser: question };
    },
  };
}

function memoryTools(ctx: ToolContext, scope: MemoryScope): AgentTool[] {
  return [
    {
      name: 'remember',
      kind: 'platform',
      spec: tool('remember', 'Stores a fact about this user for later conversations (same key replaces).', {
        key: { type: 'string', description: 'A short name for the fact, e.g. "preferred_location"' },
        value: { type: 'string', description: 'The fact' },
      }, ['key', 'value']),
      run: async (args) => {
        const key = text(args.key, 'key', 200);
        const value = text(args.value, 'value', MEMORY_VALUE_MAX_CHARS);
        await writeUserMemory(ctx.deps.sql, scope, 'memory', { [key]: value });
        return { output: { stored: key } };
      },
    },
    {
      name: 'recall',
      kind: 'platform',
      spec: tool('recall', 'Reads the facts stored about this user (one key, or all).', {
        key: { type: 'string', description: 'One fact (default: all)' },
      }),
      run: async (args) => ({ output: { facts: await readUserMemory(ctx.deps.sql, scope, 'memory', typeof args.key === 'string' && args.key ? args.key : undefined) } }),
    },
  ];
}

function preferencesTool(ctx: ToolContext, scope: MemoryScope): AgentTool {
  return {
    name: 'get_user_preferences',
    kind: 'platform',
    spec: tool('get_user_preferences', 'The preferences this user has given (language, tone, location, ...).', {}),
    run: async () => ({ output: { preferences: await readUserMemory(ctx.deps.sql, scope, 'preference') } }),
  };
}

export async function buildPlatformTools(ctx: ToolContext): Promise<AgentTool[]> {
  const enabled = new Set(ctx.config.platformTools);
  const tools: AgentTool[] = [];
  if (enabled.has('current_time')) tools.push(currentTime());
  if (enabled.has('http_get')) tools.push(httpGet(ctx));
  if (enabled.has('send_email') && ctx.toolsConfig.notify_email) tools.push(sendEmail(ctx));
  if (enabled.has('ask_user')) tools.push(askUser());
  // Memory is per end user: without input.user_id there is no one to remember for.
  if (ctx.userId) {
    const scope = { tenantId: ctx.scope.tenantId, agentId: ctx.agent.id, userId: ctx.userId };
    if (ctx.config.persistentMemory) tools.push(...memoryTools(ctx, scope));
    if (ctx.config.userPreferences) tools.push(preferencesTool(ctx, scope));
  }
  return tools;
}
