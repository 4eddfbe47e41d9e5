import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { Tenant } from './tenant.js';
import { ROLES, EMAIL_TOKEN_KINDS } from '../column-values.js';


export const User = defineEntity({
  name: 'User',
  tableName: 'users',
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade').index(),
    // Stored lower-cased; logins are by e-mail alone, so it is unique across the platform.
    email: p.string().length(320).unique(),
    fullName: p.string().length(200).nullable(),
    passwordHash: p.string().length(255),
    role: p.enum(ROLES),
    emailVerified: p.boolean().default(false),
    // Tokens issued before this instant are refused (set on password change).
    passwordChangedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type IUser = InferEntity<typeof User>;


/** One-time tokens sent by e-mail; only their SHA-256 hash is stored. */
export const EmailToken = defineEntity({
  name: 'EmailToken',
  tableName: 'email_tokens',
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    user: () => p.manyToOne(User).deleteRule('cascade').index(),
    kind: p.enum(EMAIL_TOKEN_KINDS),
    tokenHash: p.string().length(64).unique(),
    expiresAt: p.datetime().index(),
    usedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});

/** Mail waiting to be sent, or kept here when no SMTP_URL is configured. */
export const OutboxMessage = defineEntity({
  name: 'OutboxMessage',
  tableName: 'outbox_messages',
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    // The tenant whose workflow or agent sent it (null: the platform's own account mail), so an
    // abuse report about a mail from MAIL_FROM leads to its sender.
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade').nullable().index(),
    // The normalised recipients, comma separated. A list can outgrow a b-tree entry, so no index.
    toAddress: p.text(),
    // RFC 5322 caps a header line at 998 characters.
    subject: p.string().length(998),
    body: p.text(),
    kind: p.string().length(64),
    createdAt: p.datetime().onCreate(() => new Date()),
    sentAt: p.datetime().nullable(),
    lastError: p.text().nullable(),
  },
});

export const LoginAttempt = defineEntity({
  name: 'LoginAttempt',
  tableName: 'login_attempts',
  indexes: [{ properties: ['email', 'createdAt'] }],
  properties: {
    id: p.uuid().primary().defaultRaw('gen_random_uuid()'),
    email: p.string().length(320),
    succeeded: p.boolean(),
    ip: p.string().length(64).nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
