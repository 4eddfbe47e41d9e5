import { defineEntity, p } from '@mikro-orm/core';
import { Tenant } from './tenant.js';

/**
 * Mail a tenant has queued on one UTC day (each recipient counts once): the daily quota's counter,
 * raised in the transaction that queues the mail, so parallel runs cannot pass the quota together.
 */
export const MailDayCount = defineEntity({
  name: 'MailDayCount',
  tableName: 'mail_day_counts',
  properties: {
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade').primary(),
    day: p.date().primary(),
    mails: p.integer().default(0),
  },
});
