// `liya events ...`: event subscriptions (list, create, test, delete, resume, rotate), the
// catalogue, the delivery log, replays, and `tail`, which follows new events as they are recorded.
// Everything goes through the API key routes (events:read, events:write).
import { setTimeout as sleep } from 'node:timers/promises';
import { Command } from 'commander';
import { createElement as h } from 'react';
import { action } from '../action.js';
import { commandContext } from '../context.js';
import { dateTime, oneLine, segment } from '../format.js';
import { parseInteger, parseList } from '../options.js';
import { printJson, show, withSpinner } from '../output.js';
import { pollIntervalMs } from '../poll.js';
import type { ResponseData } from '../response-types.js';
import { IssuedKey } from '../ui/issued-key.js';
import { Stack } from '../ui/stack.js';
import { StatusLine } from '../ui/status.js';
import { Table } from '../ui/table.js';

type Subscription = ResponseData<'eventSubscriptions', 'getSubscription'>;
type Created = ResponseData<'eventSubscriptions', 'createSubscription'>;
type EventDetail = ResponseData<'eventSubscriptions', 'getEvent'>;
type EventList = ResponseData<'eventSubscriptions', 'listEvents'>;
type Delivery = EventDetail['deliveries'][number];

const SUBS = '/v1/event-subscriptions';
const client = (command: Command) => commandContext(command).withApiKey();

const subscriptionRows = (subs: Subscription[]) =>
  subs.map((s) => [
    s.id,
    oneLine(s.url, 60),
    s.event_types ? oneLine(s.event_types.join(','), 50) : 'all',
    s.status === 'paused' ? `paused: ${oneLine(s.paused_reason ?? '', 50)}` : s.status,
    String(s.failed_deliveries),
  ]);

const attemptText = (d: Delivery) => {
  const last = d.attempt_log.at(-1);
  if (!last) return d.status === 'pending' ? `pending, first attempt ${dateTime(d.next_attempt_at)}` : d.status;
  const answer = last.status_code !== null ? `HTTP ${last.status_code}` : (last.error ?? 'no answer');
  return `${d.status} after ${d.attempts} attempt${d.attempts === 1 ? '' : 's'}: ${answer} in ${last.latency_ms} ms`;
};

export function eventsCommand(): Command {
  const events = new Command('events').description('Events out: subscribe URLs to what happens, test them, read deliveries, tail events; needs --api-key');

  events
    .command('types')
    .description('The event catalogue: every type, its filters and whether it is opt-in')
    .option('--json', 'print the catalogue (with each type\'s JSON Schema) as JSON')
    .action(
      action(async (flags: { json?: boolean }, command: Command) => {
        const { types } = await client(command).get<ResponseData<'eventSubscriptions', 'listEventTypes'>>('/v1/event-types', { auth: 'bearer' });
        if (flags.json) return printJson({ types });
        await show(h(Table, { headers: ['Type', 'Filters', 'Opt-in', 'What happened'], rows: types.map((t) => [t.type, t.filters.join(',') || '—', t.opt_in ? 'yes' : '', oneLine(t.description, 80)]) }));
      }),
    );

  events
    .command('list')
    .description('The tenant\'s subscriptions: URL, types, status (active, disabled, paused and why) and failed deliveries in a row')
    .option('--json', 'print the subscriptions as JSON')
    .action(
      action(async (flags: { json?: boolean }, command: Command) => {
        const { subscriptions } = await client(command).get<{ subscriptions: Subscription[] }>(SUBS, { auth: 'bearer' });
        if (flags.json) return printJson({ subscriptions });
        await show(h(Table, { headers: ['Id', 'URL', 'Types', 'Status', 'Failed'], rows: subscriptionRows(subscriptions), empty: 'No subscriptions: liya events create --endpoint <url>' }));
      }),
    );

  events
    .command('create')
    .description('Subscribe a URL to events; the signing secret is printed once')
    .requiredOption('--endpoint <url>', 'where deliveries are POSTed (http or https)')
    .option('--types <list>', 'comma-separated event types (liya events types); default: every type but the opt-in ones', parseList)
    .option('--domain <key>', 'only events of this domain')
    .option('--workflow <id>', 'only events of this workflow (its id)')
    .option('--agent <key>', 'only events of this agent')
    .option('--description <text>', 'a note shown in the list')
    .option('--disabled', 'create it disabled (enable it later with the API)')
    .option('--json', 'print {subscription, secret} as JSON')
    .action(
      action(async (flags: { endpoint: string; types?: string[]; domain?: string; workflow?: string; agent?: string; description?: string; disabled?: boolean; json?: boolean }, command: Command) => {
        const filter = { ...(flags.domain ? { domain: flags.domain } : {}), ...(flags.workflow ? { workflow_id: flags.workflow } : {}), ...(flags.agent ? { agent_key: flags.agent } : {}) };
        const body = {
          url: flags.endpoint,
          ...(flags.types ? { event_types: flags.types } : {}),
          ...(Object.keys(filter).length ? { filter } : {}),
          ...(flags.description ? { description: flags.description } : {}),
          ...(flags.disabled ? { enabled: false } : {}),
        };
        const created = await withSpinner('Subscribing', () => client(command).post<Created>(SUBS, { auth: 'bearer', body }));
        if (flags.json) return printJson(created);
        await show(
          h(
            Stack,
            null,
            h(StatusLine, { kind: 'success', message: `Subscribed ${created.subscription.url} (${created.subscription.id})` }),
            h(IssuedKey, {
              owner: `the signing secret of subscription ${created.subscription.id}`,
              apiKey: created.secret,
              notes: ['Verify each delivery\'s webhook-signature with it (Standard Webhooks).', `Send a test: liya events test ${created.subscription.id}`],
            }),
          ),
        );
      }),
    );

  events
    .command('test')
    .description('Send an event.test to a subscription and wait for its first attempt: the receiver\'s answer and latency')
    .argument('<subscriptionId>', 'the subscription (liya events list)')
    .option('--max-wait <seconds>', 'stop waiting after this long (default 30)', parseInteger(1, 3600), 30)
    .option('--json', 'print the event with its delivery as JSON')
    .action(
      action(async (subscriptionId: string, flags: { maxWait: number; json?: boolean }, command: Command) => {
        const api = client(command);
        const sent = await api.post<{ event_id: string; delivery_id: string }>(`${SUBS}/${segment(subscriptionId)}/test`, { auth: 'bearer' });
        const deadline = Date.now() + flags.maxWait * 1000;
        let detail = await api.get<EventDetail>(`/v1/events/${segment(sent.event_id)}`, { auth: 'bearer' });
        const attempted = () => detail.deliveries.some((d) => d.attempt_log.length > 0);
        while (!attempted() && Date.now() < deadline) {
          await sleep(pollIntervalMs());
          detail = await api.get<EventDetail>(`/v1/events/${segment(sent.event_id)}`, { auth: 'bearer' });
        }
        if (flags.json) return printJson(detail);
        const delivery = detail.deliveries[0];
        const ok = delivery?.status === 'delivered';
        await show(
          h(StatusLine, {
            kind: ok ? 'success' : 'error',
            message: `Test event ${sent.event_id}: ${delivery ? attemptText(delivery) : 'no delivery'}`,
            lines: delivery?.attempt_log.at(-1)?.response_excerpt ? [`answer: ${oneLine(delivery.attempt_log.at(-1)!.response_excerpt!, 200)}`] : [],
            hints: ok ? [] : [`The delivery log: liya events deliveries ${subscriptionId}`],
          }),
        );
        return ok ? 0 : 1;
      }),
    );

  events
    .command('deliveries')
    .description('A subscription\'s deliveries, newest first, with the last attempt of each')
    .argument('<subscriptionId>', 'the subscription')
    .option('--status <status>', 'pending | delivered | failed')
    .option('--limit <n>', 'rows (1-100, default 20)', parseInteger(1, 100), 20)
    .option('--json', 'print the deliveries with every attempt as JSON')
    .action(
      action(async (subscriptionId: string, flags: { status?: string; limit: number; json?: boolean }, command: Command) => {
        const page = await client(command).get<ResponseData<'eventSubscriptions', 'listDeliveries'>>(`${SUBS}/${segment(subscriptionId)}/deliveries`, {
          auth: 'bearer',
          query: { status: flags.status, limit: flags.limit },
        });
        if (flags.json) return printJson(page);
        await show(h(Table, { headers: ['Event', 'Type', 'Created', 'Outcome'], rows: page.deliveries.map((d) => [d.event_id, d.event_type, dateTime(d.created_at), attemptText(d)]), empty: 'No deliveries yet.' }));
      }),
    );

  events
    .command('tail')
    .description('Follow the tenant\'s events as they are recorded (one line each) until Ctrl-C')
    .option('--type <type>', 'only this event type')
    .option('--once', 'print the latest events and stop')
    .option('--json', 'one JSON event per line')
    .action(
      action(async (flags: { type?: string; once?: boolean; json?: boolean }, command: Command) => {
        const api = client(command);
        const seen = new Set<string>();
        const print = (event: EventList['events'][number]) => {
          if (flags.json) process.stdout.write(`${JSON.stringify(event)}\n`);
          else process.stdout.write(`${dateTime(event.timestamp)}  ${event.type.padEnd(24)}  ${event.id}  ${oneLine(JSON.stringify(event.data), 120)}\n`);
        };
        let stop = false;
        process.once('SIGINT', () => (stop = true));
        let first = true;
        while (!stop) {
          const { events: page } = await api.get<EventList>('/v1/events', { auth: 'bearer', query: { type: flags.type, limit: first ? 20 : 100 } });
          // Newest first from the API: printed oldest first.
          for (const event of [...page].reverse()) {
            if (seen.has(event.id)) continue;
            seen.add(event.id);
            print(event);
          }
          if (flags.once) break;
          first = false;
          await sleep(pollIntervalMs());
        }
      }),
    );

  events
    .command('replay')
    .description('Send an event again (the same webhook-id) to every subscription that had it, or to one')
    .argument('<eventId>', 'the event (evt_…)')
    .option('--subscription <id>', 'only to this subscription')
    .option('--json', 'print the new deliveries as JSON')
    .action(
      action(async (eventId: string, flags: { subscription?: string; json?: boolean }, command: Command) => {
        const result = await client(command).post<{ deliveries: { id: string; subscription_id: string }[] }>(`/v1/events/${segment(eventId)}/replay`, {
          auth: 'bearer',
          body: flags.subscription ? { subscription_id: flags.subscription } : {},
        });
        if (flags.json) return printJson(result);
        await show(h(StatusLine, { kind: 'success', message: `Replaying ${eventId} to ${result.deliveries.length} subscription${result.deliveries.length === 1 ? '' : 's'}` }));
      }),
    );

  for (const [name, description, path] of [
    ['resume', 'Resume a paused or disabled subscription: the deliveries kept meanwhile are sent now', 'resume'],
    ['rotate', 'A new signing secret (printed once); the old one keeps signing for --grace seconds', 'rotate-secret'],
  ] as const) {
    const sub = events.command(name).description(description).argument('<subscriptionId>', 'the subscription').option('--json', 'print the answer as JSON');
    if (name === 'rotate') sub.option('--grace <seconds>', 'how long the old secret signs too (default 86400, 0: at once)', parseInteger(0, 7 * 24 * 3600));
    sub.action(
      action(async (subscriptionId: string, flags: { grace?: number; json?: boolean }, command: Command) => {
        const body = name === 'rotate' && flags.grace !== undefined ? { grace_period_seconds: flags.grace } : undefined;
        const result = await client(command).post<{ secret?: string; subscription?: Subscription } & Partial<Subscription>>(`${SUBS}/${segment(subscriptionId)}/${path}`, { auth: 'bearer', body });
        if (flags.json) return printJson(result);
        if (result.secret) {
          await show(h(IssuedKey, { owner: `the new signing secret of subscription ${subscriptionId}`, apiKey: result.secret, notes: ['The previous secret signs too until its grace ends.'] }));
        } else {
          await show(h(StatusLine, { kind: 'success', message: `Subscription ${subscriptionId} is ${result.status}` }));
        }
      }),
    );
  }

  events
    .command('delete')
    .description('Delete a subscription with its deliveries')
    .argument('<subscriptionId>', 'the subscription')
    .action(
      action(async (subscriptionId: string, _flags: unknown, command: Command) => {
        await client(command).call('DELETE', `${SUBS}/${segment(subscriptionId)}`, { auth: 'bearer' });
        await show(h(StatusLine, { kind: 'success', message: `Deleted subscription ${subscriptionId}` }));
      }),
    );

  return events;
}
