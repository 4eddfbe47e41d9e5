import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signupTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';

interface Received {
  to: string[];
  raw: string;
}

// Bodies arrive quoted-printable: undo soft line breaks and =XX escapes.
const decodeQuotedPrintable = (raw: string) =>
  raw.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));

describe('mail delivery through SMTP', () => {
  const received: Received[] = [];
  let smtp: SMTPServer;
  let t: TestServer;

  beforeAll(async () => {
    smtp = new SMTPServer({
      authOptional: true,
      disabledCommands: ['STARTTLS'],
      onData(stream, session, callback) {
        let raw = '';
        stream.on('data', (chunk: Buffer) => (raw += chunk.toString('utf8')));
        stream.on('end', () => {
          received.push({ to: session.envelope.rcptTo.map((r) => r.address), raw: decodeQuotedPrintable(raw) });
          callback();
        });
      },
    });
    await new Promise<void>((resolve) => smtp.listen(0, '127.0.0.1', resolve));
    const { port } = smtp.server.address() as AddressInfo;
    t = await startTestServer({ SMTP_URL: `smtp://127.0.0.1:${port}`, MAIL_FROM: 'Liya <no-reply@liya.test>' });
  });
  afterAll(async () => {
    await t?.close();
    await new Promise<void>((resolve) => smtp.close(() => resolve()));
  });

  it('sends the verification mail queued at signup and marks it sent', async () => {
    const owner = await signupTenant(t.api);
    const mail = await waitFor(() => received.find((m) => m.to.includes(owner.email)), 'the verification mail');
    expect(mail.raw).toContain('Subject: Confirm your e-mail address');
    expect(mail.raw).toMatch(/verify-email\?token=[A-Za-z0-9_-]{43}/);
    const rows = await waitFor(async () => {
      const r = await t.sql<{ sent_at: Date | null }>('select sent_at from outbox_messages where to_address = $1', [owner.email]);
      return r[0]?.sent_at ? r : null;
    }, 'sent_at');
    expect(rows).toHaveLength(1);
  });

  it('the token in the mail verifies the address', async () => {
    const owner = await signupTenant(t.api);
    const mail = await waitFor(() => received.find((m) => m.to.includes(owner.email)), 'the verification mail');
    const token = /verify-email\?token=([A-Za-z0-9_-]{43})/.exec(mail.raw)![1];
    const res = await t.api.post('/auth/verify-email', { token });
    expect(res.status).toBe(200);
    expect(res.body.data.user.emailVerified).toBe(true);
  });
});
