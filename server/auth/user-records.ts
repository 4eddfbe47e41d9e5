// What other folders may use of users, email tokens and login attempts. Only this folder imports
// its store/ (no-foreign-store in .dependency-cruiser.cjs); other folders come here, so a store can
// change its statements, split or merge without its callers noticing.
export { deleteExpiredEmailTokens } from './store/email-tokens.js';
export { deleteLoginAttemptsBefore } from './store/login-attempts.js';
export { countTenantOwners, deleteUser, findTenantUser, getUser, insertUser, isEmailTaken, listTenantUsers, saveUserChanges } from './store/users.js';
