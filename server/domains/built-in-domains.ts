/** Built-in domains a tenant can have enabled (its own custom domains are governed separately). */
export const BUILT_IN_DOMAINS = ['hiring'] as const;

/** Whether the key names a built-in domain (no custom domain may take such a key). */
export const isBuiltInDomain = (domainKey: string) => (BUILT_IN_DOMAINS as readonly string[]).includes(domainKey);
