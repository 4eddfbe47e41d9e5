import type { Transporter } from 'nodemailer';

export interface MailMessage {
  to: string;
  subject: string;
  body: string;
}

export interface Mailer {
  /** True when SMTP_URL is configured; otherwise mail stays in the outbox table. */
  readonly enabled: boolean;
  send(message: MailMessage): Promise<void>;
}

export function createMailer(smtpUrl: string | undefined, from: string): Mailer {
  if (!smtpUrl) {
    return {
      enabled: false,
      async send() {
        throw new Error('SMTP_URL is not configured');
      },
    };
  }
  // nodemailer (~7 MB) loads with the first message, not with every server.
  let transport: Promise<Transporter> | null = null;
  return {
    enabled: true,
    async send(message) {
      transport ??= import('nodemailer').then(({ default: nodemailer }) => nodemailer.createTransport(smtpUrl));
      await (await transport).sendMail({ from, to: message.to, subject: message.subject, text: message.body });
    },
  };
}
