// What other folders may use of mail day counts and the outbox. Only this folder imports its store/
// (no-foreign-store in .dependency-cruiser.cjs); other folders come here, so a store can change its
// statements, split or merge without its callers noticing.
export { deleteDayCountsBefore } from './store/mail-day-counts.js';
export { deleteOutboxMessagesSentBefore } from './store/outbox-messages.js';
