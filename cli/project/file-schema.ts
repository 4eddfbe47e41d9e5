// The JSON Schema of project files (schema/liya-project.schema.json, generated from the server's
// project schemas and committed): read from beside the CLI at run time, compiled once, and used to
// validate each file, to order an export's fields, and to describe a bad value.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { Kind } from './project-kinds.js';

export const SCHEMA_FILE_NAME = 'liya-project.schema.json';

// cli/project/ in the sources, dist/cli/project/ in a build: the build copies schema/ beside cli/.
const SCHEMA_PATH = fileURLToPath(new URL(`../../schema/${SCHEMA_FILE_NAME}`, import.meta.url));

export type JsonSchema = Record<string, unknown>;

export interface FileSchema {
  /** The schema file's exact text (an export copies it into the folder). */
  text: string;
  root: JsonSchema;
  /** Validates one file's value (with its `kind`). */
  validatorFor(kind: Kind): ValidateFunction;
  /** Validates one case of a dataset's cases file. */
  validateCase: ValidateFunction;
  /** The definition of a kind's file. */
  definitionOf(kind: Kind): JsonSchema;
  /** `schema` with a local `$ref` followed. */
  resolve(schema: unknown): JsonSchema;
}

const definitionName = (kind: Kind) => `${kind.replace(/(^|_)([a-z])/g, (_m, _sep, c: string) => c.toUpperCase())}File`;

let loaded: FileSchema | undefined;

/** The schema, read and compiled on first use. */
export function fileSchema(): FileSchema {
  if (loaded) return loaded;
  let text: string;
  try {
    text = readFileSync(SCHEMA_PATH, 'utf8');
  } catch (err) {
    throw new Error(`The project file schema is missing (${SCHEMA_PATH}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); rebuild liya: npm run build`);
  }
  const root = JSON.parse(text) as JsonSchema;
  const definitions = (root.definitions ?? {}) as Record<string, JsonSchema>;
  // verbose: errors carry their schema and data, which the messages for alternatives need.
  const ajv = new Ajv({ allErrors: true, strict: false, verbose: true });
  (addFormats as unknown as (a: Ajv) => void)(ajv);
  ajv.addSchema(root, 'project');
  const validators = new Map<Kind, ValidateFunction>();
  const resolve = (schema: unknown): JsonSchema => {
    let current = (schema ?? {}) as JsonSchema;
    for (let hops = 0; typeof current.$ref === 'string' && hops < 10; hops++) {
      const name = /^#\/definitions\/(.+)$/.exec(current.$ref)?.[1];
      if (!name || !definitions[name]) break;
      current = definitions[name];
    }
    return current;
  };
  loaded = {
    text,
    root,
    validatorFor(kind) {
      let validate = validators.get(kind);
      if (!validate) {
        validate = ajv.getSchema(`project#/definitions/${definitionName(kind)}`);
        if (!validate) throw new Error(`The project file schema has no definition for ${kind}; rebuild liya: npm run build`);
        validators.set(kind, validate);
      }
      return validate;
    },
    validateCase: ajv.compile({ $ref: `project#/definitions/${definitionName('eval_dataset')}/properties/cases/items` }),
    definitionOf: (kind) => definitions[definitionName(kind)] ?? {},
    resolve,
  };
  return loaded;
}
