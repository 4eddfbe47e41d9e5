/** Who is acting, for the audit log. */
export interface Actor {
  type: 'user' | 'api_key' | 'admin' | 'system';
  id: string | null;
  name: string;
}
