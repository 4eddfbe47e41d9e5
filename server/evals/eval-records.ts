// What other folders may use of datasets and suites. Only this folder imports its store/ (no-
// foreign-store in .dependency-cruiser.cjs); other folders come here, so a store can change its
// statements, split or merge without its callers noticing.
export { deleteTenantCase, listDatasetCases, listTenantDatasets } from './store/datasets.js';
export { listTenantSuites } from './store/suites.js';
