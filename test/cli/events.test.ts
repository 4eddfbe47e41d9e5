// `liya events`: create a subscription (secret printed once), list it, test it (the receiver's answer
// shown), read its deliveries, tail the events, rotate, resume, replay and delete, as a user runs
// the CLI (a real subprocess against a real server) with an API key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLiya, type CliRunOptions } from '../support/cli.js';
import { startEventReceiver, verifyDelivery, type EventReceiver } from '../support/event-receiver.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let receiver: EventReceiver;
let tenant: SignedUpTenant;

function liya(args: string[], options: CliRunOptions = {}) {
  return runLiya(args, { ...options, env: { LIYA_URL: t.url, LIYA_API_KEY: tenant.apiKey, LIYA_EVAL_POLL_MS: '50', ...options.env } });
}

beforeAll(async () => {
  receiver = await startEventReceiver();
  t = await startTestServer({ OUTBOUND_ALLOWED_HOSTS: '127.0.0.1' });
  tenant = await signupTenant(t.api, { companyName: 'Events CLI' });
});
afterAll(async () => {
  await t?.close();
  await receiver?.close();
});

describe('liya events', () => {
  it('creates, lists, tests, reads deliveries, tails, rotates, replays and deletes', async () => {
    const created = await liya(['events', 'create', '--endpoint', `${receiver.url}/cli`, '--types', 'event.test,key.created', '--json']);
    expect(created.code, created.stderr).toBe(0);
    const { subscription, secret } = JSON.parse(created.stdout) as { subscription: { id: string }; secret: string };
    expect(secret).toMatch(/^whsec_/);

    const list = await liya(['events', 'list']);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toContain(subscription.id);
    expect(list.stdout).toContain('event.test,key.created');
    expect(list.stdout).not.toContain(secret);

    const test = await liya(['events', 'test', subscription.id]);
    expect(test.code, test.stderr).toBe(0);
    expect(test.stdout).toMatch(/delivered after 1 attempt: HTTP 200 in \d+ ms/);
    const delivered = receiver.received.find((r) => r.path === '/cli')!;
    expect(verifyDelivery(delivered, secret)).toMatchObject({ type: 'event.test' });

    const deliveries = await liya(['events', 'deliveries', subscription.id]);
    expect(deliveries.stdout).toContain(delivered.json.id);
    expect(deliveries.stdout).toContain('event.test');

    const tail = await liya(['events', 'tail', '--once', '--json']);
    expect(tail.code, tail.stderr).toBe(0);
    expect(tail.stdout.trim().split('\n').map((line) => JSON.parse(line).id)).toContain(delivered.json.id);

    const rotated = await liya(['events', 'rotate', subscription.id, '--grace', '0', '--json']);
    expect(rotated.code, rotated.stderr).toBe(0);
    const newSecret = JSON.parse(rotated.stdout).secret as string;
    const replayed = await liya(['events', 'replay', delivered.json.id]);
    expect(replayed.stdout).toContain('to 1 subscription');

    const types = await liya(['events', 'types']);
    expect(types.stdout).toContain('intent.run.completed');

    // An unknown subscription is a clear error with exit code 1; bad input too.
    const missing = await liya(['events', 'test', '00000000-0000-4000-8000-000000000000']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('not found');
    const bad = await liya(['events', 'create', '--endpoint', 'ftp://nowhere']);
    expect(bad.code).toBe(1);

    const removed = await liya(['events', 'delete', subscription.id]);
    expect(removed.code, removed.stderr).toBe(0);
    expect((await liya(['events', 'list', '--json'])).stdout).toContain('"subscriptions": []');
    // The replay went out signed with the new secret alone.
    const again = receiver.received.filter((r) => r.path === '/cli' && r.json.id === delivered.json.id).at(-1)!;
    if (again !== delivered) expect(verifyDelivery(again, newSecret)).toBeTruthy();
  });
});
