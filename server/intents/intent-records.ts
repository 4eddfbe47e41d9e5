// What other folders may use of custom intents and the intent answer cache. Only this folder
// imports its store/ (no-foreign-store in .dependency-cruiser.cjs); other folders come here, so a
// store can change its statements, split or merge without its callers noticing.
export { countIntentsByDomain, findCustomIntentKeys, findCustomIntentRefs, findIntent, listIntentBindings, listIntents } from './store/custom-intents.js';
export { deleteExpiredIntentCache } from './store/run-record.js';
