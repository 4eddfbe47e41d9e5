// Tells a path that exists under other methods (405 with Allow) from one that does not exist (404).
// Consulted only when no route matched, so its linear scan costs nothing on served requests.
import type { FastifyInstance } from 'fastify';

interface RoutePattern {
  pattern: RegExp;
  methods: Set<string>;
}

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

function toPattern(url: string): RegExp {
  const source = url
    .split('/')
    .map((segment) => (segment.startsWith(':') ? '[^/]+' : escape(segment)))
    .join('/');
  return new RegExp(`^${source}/?$`);
}

export interface AllowedMethods {
  /** The methods registered for `path` (without its query), sorted; empty when none. */
  forPath(path: string): string[];
}

/** Records every route as it is registered; call before any route is added. */
export function trackAllowedMethods(app: FastifyInstance): AllowedMethods {
  const routes = new Map<string, RoutePattern>();
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    let entry = routes.get(route.url);
    if (!entry) {
      entry = { pattern: toPattern(route.url), methods: new Set() };
      routes.set(route.url, entry);
    }
    for (const method of methods) entry.methods.add(method.toUpperCase());
  });
  return {
    forPath(path) {
      const allowed = new Set<string>();
      for (const { pattern, methods } of routes.values()) {
        if (pattern.test(path)) for (const method of methods) allowed.add(method);
      }
      return [...allowed].sort();
    },
  };
}
