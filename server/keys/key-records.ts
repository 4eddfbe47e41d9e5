// What other folders may use of API keys and environments. Only this folder imports its store/ (no-
// foreign-store in .dependency-cruiser.cjs); other folders come here, so a store can change its
// statements, split or merge without its callers noticing.
export { findProductionKeyPreview, saveKeyChanges } from './store/api-keys.js';
export type { ApiKeyLookupRow } from './store/api-keys.js';
export { insertEnvironmentUnlessTaken, listEnvironmentsWithKeys } from './store/environments.js';
