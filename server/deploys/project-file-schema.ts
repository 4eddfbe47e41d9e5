// The JSON Schema of one file of a project folder (`liya export`, `liya plan`, `liya apply`): a
// `kind` and that kind's fields, generated from the project schemas so the two never disagree. It is
// committed as schema/liya-project.schema.json (a test checks it equals this output): editors read it
// through the `# yaml-language-server: $schema=...` line of each exported file, and the CLI, which
// may not import server code, validates files with it.
//
//   node bin/run-ts.mjs server/deploys/project-file-schema.ts   rewrites the committed file
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { RESOURCE_KINDS, RESOURCE_SCHEMAS, type ResourceKind } from './project.schemas.js';
import { SECRET_PATHS } from './secret-paths.js';

/** Where the committed copy lives, relative to the repository root. */
export const PROJECT_FILE_SCHEMA_PATH = 'schema/liya-project.schema.json';

const pascal = (kind: ResourceKind) => kind.replace(/(^|_)([a-z])/g, (_m, _sep, c: string) => c.toUpperCase());

const kindField = (kind: ResourceKind) => z.literal(kind).describe(`This file holds one ${kind.replace('_', ' ')}`);

/** One kind's file: `kind` first (exports write the fields in this order), then the resource's fields. */
function fileSchemaOf(kind: ResourceKind) {
  if (kind !== 'eval_dataset') return z.strictObject({ kind: kindField(kind), ...RESOURCE_SCHEMAS[kind].shape }).meta({ id: `${pascal(kind)}File` });
  const shape = RESOURCE_SCHEMAS.eval_dataset.shape;
  // A dataset's cases are inline or in a file beside it; exactly one of the two (added below, as
  // zod cannot say "one of these two keys" in a way the JSON Schema keeps).
  return z
    .strictObject({
      kind: kindField(kind),
      ...shape,
      cases: shape.cases.optional(),
      cases_file: z
        .string()
        .regex(/^[^\\]+\.(jsonl|csv)$/, 'a .jsonl or .csv file name')
        .optional()
        .describe('Instead of `cases`: a JSON Lines file (one case per line) or a CSV file (columns input (JSON text), message, expected_output (JSON or text), notes), relative to this file'),
    })
    .meta({ id: `${pascal(kind)}File` });
}

type JsonObject = Record<string, unknown>;

/** The schema as an object (JSON Schema draft-07, which the common editors' YAML support reads). */
export function buildProjectFileSchema(): JsonObject {
  const files = RESOURCE_KINDS.map(fileSchemaOf);
  const union = z.discriminatedUnion('kind', files as unknown as [ReturnType<typeof fileSchemaOf>, ...ReturnType<typeof fileSchemaOf>[]]);
  const generated = z.toJSONSchema(union, { target: 'draft-7', io: 'input' }) as unknown as JsonObject & { definitions: Record<string, JsonObject> };
  const dataset = generated.definitions[`${pascal('eval_dataset')}File`];
  dataset.oneOf = [{ required: ['cases'] }, { required: ['cases_file'] }];
  const { $schema, ...rest } = generated;
  return {
    $schema,
    title: 'Liya project file',
    description:
      'One resource of a Liya project folder (liya export, liya plan, liya apply): `kind` and that kind\'s fields. ' +
      'A field left out takes its default. A string that is exactly `${ENV_NAME}` is a secret reference: allowed only at the paths of `x-secret-paths`, where liya apply fills it in from its environment (or the server keeps the stored value); anywhere else it is refused.',
    'x-secret-paths': SECRET_PATHS.map(({ kind, path, holds }) => ({ kind, path, holds })),
    ...rest,
  };
}

/** The committed file's exact text. */
export const projectFileSchemaText = () => `${JSON.stringify(buildProjectFileSchema(), null, 2)}\n`;

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
  writeFileSync(path.join(root, PROJECT_FILE_SCHEMA_PATH), projectFileSchemaText());
  console.error(`wrote ${PROJECT_FILE_SCHEMA_PATH}`);
}
