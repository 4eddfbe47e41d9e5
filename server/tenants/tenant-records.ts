// What other folders may use of tenants: look-ups, the row locks that serialise key and member
// changes, profile writes. Only this folder imports its store/ (no-foreign-store in
// .dependency-cruiser.cjs); other folders come here, so a store can change its statements, split or
// merge without its callers noticing.
export { findTenantEntity, getTenantEntity, insertTenant, lockTenantForKeyShare, lockTenantForUpdate, readTenantModelSettings, selectEnabledDomains, tenantExists, updateTenantFields } from './store/tenants.js';
export type { TenantChanges } from './store/tenants.js';
