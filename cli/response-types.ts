// The server's tRPC procedures seen from the CLI, for shapes a router declares inline rather than
// as a named schema (whose `z.infer` types the CLI imports instead): types only, erased at build.
import type { inferRouterInputs, inferRouterOutputs } from '@trpc/server';
import type { AppRouter } from '../server/router.js';

type Outputs = inferRouterOutputs<AppRouter>;
type Inputs = inferRouterInputs<AppRouter>;

/** What procedure `P` of router `R` answers in `data` (every answer is `{success: true, data}`). */
export type ResponseData<R extends keyof Outputs, P extends keyof Outputs[R]> = Outputs[R][P] extends { data: infer D } ? D : never;

/** What procedure `P` of router `R` takes (path parameters, query and body together). */
export type RequestInput<R extends keyof Inputs, P extends keyof Inputs[R]> = Inputs[R][P];
