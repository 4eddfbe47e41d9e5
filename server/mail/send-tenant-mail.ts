// Mail a tenant sends (workflow send_email steps, the agents' send_email tool) leaves from the
// platform's own address, so the tenant's plan bounds it: recipients per mail, whom it may go to
// (trial and free plans: only the tenant's own users with a verified address, so a new account
// cannot mail strangers), how much per UTC day, and how large one mail is. The platform's own
// account mail (verification, password reset) goes through queueMail directly and is never counted.
import type { EntityManager } from '../../db/orm.js';
import type { AppDeps } from '../deps.js';
import { AppError } from '../errors.js';
import { LimitExceededError, limitsForPlan, type PlanLimits } from '../tenants/plan-limits.js';
import { parseRecipients } from './mail-recipients.js';
import { queueMail } from './outbox.js';
import { reserveDayMails } from './store/mail-day-counts.js';
import { verifiedUserAddresses } from './store/tenant-recipients.js';

/** Characters of a subject, at most (RFC 5322's limit for one header line). */
export const MAIL_SUBJECT_MAX_CHARS = 998;
/** Bytes (UTF-8) of a body, at most: a long report fits, megabytes per mail do not. */
export const MAIL_BODY_MAX_BYTES = 256 * 1024;

export interface TenantMailSender {
  tenantId: string;
  plan: string;
  /** The plan's limits as the caller already has them (default: limitsForPlan with PLAN_LIMITS). */
  limits?: PlanLimits;
}

export interface TenantMail {
  /** An address, a comma-separated list (`Name <address>` allowed) or a list of them, as rendered. */
  to: unknown;
  subject: unknown;
  body: unknown;
  /** The outbox kind (`workflow_email`, `agent_notification`). */
  kind: string;
}

export interface QueuedTenantMail {
  /** The recipients as stored and sent: lower-cased bare addresses, comma separated. */
  to: string;
  recipients: string[];
}

export interface SendTenantMailOptions {
  /** The instant whose UTC day the mail counts on (default: now). */
  now?: Date;
}

// Templates put values into text this way too: nothing is empty, objects are JSON.
const asText = (value: unknown): string =>
  value === null || value === undefined ? '' : typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);

function checkContent(mail: TenantMail): { subject: string; body: string } {
  // A line break in a subject would end the header; a folded subject reads as one line anyway.
  const subject = asText(mail.subject).replace(/\s*[\r\n]+\s*/g, ' ');
  if (subject.length > MAIL_SUBJECT_MAX_CHARS) {
    throw new AppError('INVALID_INPUT', `the subject is ${subject.length} characters long; a mail's subject may have at most ${MAIL_SUBJECT_MAX_CHARS}`);
  }
  const body = asText(mail.body);
  const bytes = Buffer.byteLength(body, 'utf8');
  if (bytes > MAIL_BODY_MAX_BYTES) {
    throw new AppError('PAYLOAD_TOO_LARGE', `the body is ${bytes} bytes long; a mail's body may have at most ${MAIL_BODY_MAX_BYTES} bytes (256 KiB)`);
  }
  return { subject, body };
}

/**
 * Checks a tenant's mail against its plan and queues it (the outbox row, with SMTP its delivery
 * job, and the day's count, in one transaction on `em`). Throws INVALID_INPUT or PAYLOAD_TOO_LARGE
 * for a malformed mail and LimitExceededError (MAIL_RECIPIENTS_EXCEEDED, MAIL_RECIPIENT_NOT_ALLOWED,
 * MAIL_QUOTA_EXCEEDED) for one the plan does not allow; nothing is queued or counted then.
 */
export async function sendTenantMail(em: EntityManager, deps: AppDeps, sender: TenantMailSender, mail: TenantMail, options: SendTenantMailOptions = {}): Promise<QueuedTenantMail> {
  const limits = sender.limits ?? limitsForPlan(sender.plan, deps.config.PLAN_LIMITS);
  const { subject, body } = checkContent(mail);
  const recipients = parseRecipients(mail.to);
  if (recipients.length > limits.mail_recipients) {
    throw new LimitExceededError('mail_recipients', limits.mail_recipients, `a mail may have at most ${limits.mail_recipients} recipients on the ${sender.plan} plan; this one has ${recipients.length}`);
  }
  if (!limits.mail_any_recipient) {
    const allowed = await verifiedUserAddresses(deps.sql, sender.tenantId, recipients);
    const refused = recipients.filter((address) => !allowed.has(address));
    if (refused.length > 0) {
      const named = refused.slice(0, 3).join(', ') + (refused.length > 3 ? ` and ${refused.length - 3} more` : '');
      throw new LimitExceededError(
        'mail_any_recipient',
        false,
        `on the ${sender.plan} plan mail may go only to this tenant's users with a verified e-mail address; not allowed: ${named}`,
      );
    }
  }
  const quotaError = () =>
    new LimitExceededError(
      'mail_per_day',
      limits.mail_per_day,
      limits.mail_per_day === 0
        ? `the ${sender.plan} plan sends no mail (its daily mail quota is 0)`
        : `the daily mail quota of the ${sender.plan} plan (${limits.mail_per_day}, each recipient counts) has no room for ${recipients.length === 1 ? 'this mail' : `${recipients.length} more recipients`}; it renews at 00:00 UTC`,
    );
  if (recipients.length > limits.mail_per_day) throw quotaError();
  const day = (options.now ?? new Date()).toISOString().slice(0, 10);
  const to = recipients.join(', ');
  await em.transactional(async (tx) => {
    if (!(await reserveDayMails(tx, sender.tenantId, day, recipients.length, limits.mail_per_day))) throw quotaError();
    await queueMail(tx, deps, { to, subject, body, kind: mail.kind, tenantId: sender.tenantId });
  });
  return { to, recipients };
}
