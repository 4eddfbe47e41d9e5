import type { Role } from '../../db/column-values.js';

// owner > admin > developer > viewer
const ROLE_RANK: Record<Role, number> = { viewer: 0, developer: 1, admin: 2, owner: 3 };

/** Whether `role` is `min` or higher. */
export const roleAtLeast = (role: Role, min: Role) => ROLE_RANK[role] >= ROLE_RANK[min];
