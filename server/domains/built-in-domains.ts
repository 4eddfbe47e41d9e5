/** Built-in domains a tenant can have enabled (its own custom domains are governed separately). */
export const BUILT_IN_DOMAINS = ['hiring'] as const;
