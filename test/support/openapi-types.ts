// TypeScript types for an OpenAPI document, as a client generator's users get them
// (openapi-typescript). openapi-typescript builds its output with the TypeScript 5 compiler API,
// which the project's TypeScript 7 (a native compiler) does not have: its imports of `typescript`
// are sent to the `typescript-5` package instead, for this process only and for nothing else.
import { registerHooks } from 'node:module';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const require = createRequire(import.meta.url);
let redirected = false;

function useTypeScript5ForOpenapiTypescript(): void {
  if (redirected) return;
  redirected = true;
  const typescript5 = pathToFileURL(require.resolve('typescript-5')).href;
  registerHooks({
    resolve(specifier, context, nextResolve) {
      if (specifier === 'typescript' && context.parentURL?.includes('/node_modules/openapi-typescript/')) return { url: typescript5, format: 'commonjs', shortCircuit: true };
      return nextResolve(specifier, context);
    },
  });
}

/** The `paths`, `components` and `operations` types of `document`, as a module's source text. */
export async function generateOpenApiTypes(document: object): Promise<string> {
  useTypeScript5ForOpenapiTypescript();
  const { default: openapiTS, astToString } = await import('openapi-typescript');
  const nodes = await openapiTS(structuredClone(document) as never, { exportType: true });
  return astToString(nodes);
}
