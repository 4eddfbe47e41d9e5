import nodemailer from 'nodemailer';

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
  const transport = nodemailer.createTransport(smtpUrl);
  return {
    enabled: true,
    async send(message) {
      await transport.sendMail({ from, to: message.to, subject: message.subject, text: message.body });
    },
  };
}
