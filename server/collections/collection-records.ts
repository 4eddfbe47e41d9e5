// What other folders may use of collections. Only this folder imports its store/ (no-foreign-store
// in .dependency-cruiser.cjs); other folders come here, so a store can change its statements, split
// or merge without its callers noticing.
export { lockCollectionRow, selectCollectionDefaults, selectCollectionRows } from './store/collections.js';
