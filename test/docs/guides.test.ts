// The guides and the operating manual, run as written, so they cannot drift from the API:
// - every curl request of their shell blocks is sent to a real server (with a fake model
//   provider) and must answer 2xx; <placeholders> are filled from the answers before them;
// - every `liya` command line names a real command, and each --option it shows is one that command
//   takes (`liya <command> --help`): the CLI lines are synopses, often with [optional] parts and
//   values of the reader's own, so they are checked against the CLI rather than run;
// - any other command (docker, npm, ...) must be in SKIPPED, with the reason it cannot run here;
// - every `METHOD /path` the docs name in their prose and tables is an operation of the API (its
//   OpenAPI document).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { runLiya } from '../support/cli.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';
import { parseCurl, readBlocks, splitCommands } from './doc-blocks.js';

const root = path.join(import.meta.dirname, '..', '..');
/** Every document a reader is sent to: the README, the guides, operating and security. */
const DOCS = ['README.md', 'docs/operating.md', 'docs/security.md', ...readdirSync(path.join(root, 'docs', 'guides')).map((name) => `docs/guides/${name}`)];
/** Paths the server answers outside its API (and so outside its OpenAPI document). */
const NOT_IN_API = new Set(['GET /metrics']);
const FILES = [...readdirSync(path.join(root, 'docs', 'guides')).map((name) => `docs/guides/${name}`), 'docs/operating.md'].filter((file) => file.endsWith('.md')).sort();

/** Commands the docs show that a test cannot run, by their first words, each with why. */
const SKIPPED: Record<string, string> = {
  'npm ci': 'installs the packages: the test runs on the installed tree',
  'docker build': 'builds an image: the test command has no container runtime',
  'docker run': 'runs an image: the test command has no container runtime',
  'docker compose': 'runs containers: the test command has no container runtime',
  'npx openapi-typescript': 'generates a client: test/http/generated-client.test.ts generates and type-checks it',
};

let t: TestServer;
let fake: FakeLlm;
let tenant: SignedUpTenant;

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0' });
  tenant = await signupTenant(t.api, { companyName: 'Docs reader' });
  // What the history guide's examples read: a workflow named onboarding with more failed runs than
  // one page holds (so the first page has a cursor to the next).
  const onboarding = await createWorkflow(t.api, tenant.apiKey, 'Onboarding', [MANUAL_TRIGGER, { id: 'check', step_type: 'condition', config: { expression: 'trigger.missing > 1' } }]);
  for (let i = 0; i < 101; i++) {
    const res = await t.api.post(`/v1/workflows/${onboarding.id}/run`, { input: {} }, { headers: bearer(tenant.apiKey) });
    expect(res.body.data.status).toBe('failed');
  }
}, 120_000);

afterAll(async () => {
  await t?.close();
  await fake?.close();
});

/** The value at a <placeholder>, taken from an earlier answer (by field name, anywhere in it). */
function remember(ids: Record<string, string>, value: unknown): void {
  if (Array.isArray(value)) for (const item of value) remember(ids, item);
  else if (value && typeof value === 'object') {
    for (const [field, inner] of Object.entries(value)) {
      if (typeof inner === 'string' && inner) ids[field] = inner;
      else remember(ids, inner);
    }
  }
}

/**
 * The commands a `liya` synopsis line names (`liya tenants update <id> --plan ...` → tenants update;
 * `liya agents list|show <key>` → agents list, agents show) and the --options it shows.
 */
function readSynopsis(words: string[]): { commands: string[][]; options: string[] } {
  const path: string[] = [];
  let i = 1;
  while (i < words.length && /^[a-z][a-z-]*$/.test(words[i]!)) path.push(words[i++]!);
  // Alternatives: `list|show <key>|deploy <key>` lists subcommands of the path so far.
  const alternatives = words
    .slice(i)
    .join(' ')
    .split('|')
    .map((part) => /^\s*(?:<[^>]+>\s*)?([a-z][a-z-]*)/.exec(part)?.[1])
    .filter((name): name is string => name !== undefined && words.slice(i).join(' ').includes('|'));
  const commands = alternatives.length > 1 ? alternatives.map((name) => [...path, name]) : [path];
  const options = words.slice(i).flatMap((w) => [...w.matchAll(/(?:^|\[|\|)(--[a-z][a-z-]*)/g)].map((m) => m[1]!));
  return { commands, options };
}

describe.each(FILES)('%s', (file) => {
  it('runs every request, and every liya line is a real command with real options', { timeout: 120_000 }, async () => {
    const blocks = (await readBlocks(path.join(root, file))).filter((block) => block.lang === 'sh' || block.lang === 'bash');
    const base = new URL(t.url);
    const vars: Record<string, string> = { LIYA_KEY: tenant.apiKey, KEY: tenant.apiKey, URL: t.url, LIYA_URL: t.url };
    const ids: Record<string, string> = {};
    const counts = { requests: 0, commands: 0, skipped: 0 };
    const helps = new Map<string, string>();
    /** `liya <command> --help`, which must exit 0 (an unknown command does not). */
    const helpOf = async (command: string[]) => {
      const key = command.join(' ');
      if (!helps.has(key)) {
        const help = await runLiya([...command, '--help']);
        expect(help.code, `${file}: liya ${key} --help: ${help.stdout}\n${help.stderr}`).toBe(0);
        helps.set(key, help.stdout);
      }
      return helps.get(key)!;
    };
    for (const block of blocks) {
      for (const words of splitCommands(block.text, vars)) {
        if (words[0] === 'export') continue; // the reader's own settings; the test's are in `vars`
        if (words[0] === 'curl') {
          const request = parseCurl(words);
          const fill = (text: string) => text.replace(/<(\w+)>/g, (_, name: string) => ids[name] ?? `missing-${name}`);
          // The docs' requests go to localhost:3000 (or $URL); this server listens elsewhere.
          const url = new URL(fill(request.url.replace(/^(https?:\/\/)?[^/]+/, '')), base);
          const res = await fetch(url, { method: request.method, headers: request.headers, body: request.body === undefined ? undefined : fill(request.body) });
          const text = await res.text();
          expect(res.status, `${file}: ${request.method} ${url.pathname}${url.search}: ${text.slice(0, 300)}`).toBeGreaterThanOrEqual(200);
          expect(res.status, `${file}: ${request.method} ${url.pathname}${url.search}: ${text.slice(0, 300)}`).toBeLessThan(300);
          remember(ids, JSON.parse(text));
          counts.requests++;
        } else if (words[0] === 'liya') {
          const { commands, options } = readSynopsis(words);
          let helps = await helpOf([]); // the options every command takes (--url, --api-key, ...)
          for (const command of commands) helps += await helpOf(command);
          expect(options.filter((option) => !helps.includes(option)), `${file}: options that liya ${commands.map((c) => c.join(' ')).join('|')} does not take`).toEqual([]);
          counts.commands++;
        } else {
          const skip = Object.keys(SKIPPED).find((prefix) => words.join(' ').startsWith(prefix));
          expect(skip, `${file}: a command neither run nor skipped with a reason: ${words.join(' ')}`).toBeDefined();
          counts.skipped++;
        }
      }
    }
    console.log(`${file}: ${counts.requests} requests run, ${counts.commands} liya lines checked, ${counts.skipped} commands skipped (SKIPPED)`);
  });
});

/** A path parameter as the docs write it, in a route read from the docs. */
const PARAMETER = '{}';

describe('the operations the docs name', () => {
  it('are operations of the API, with that method', async () => {
    const document = (await (await fetch(`${t.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.entries(document.paths).flatMap(([route, methods]) =>
      Object.keys(methods).map((method) => ({ method: method.toUpperCase(), segments: route.split('/') })),
    );
    // A parameter of the document's route takes any segment; a parameter the docs write (`x` below)
    // stands for any segment too (`POST /v1/hiring/<intent>`: one of the hiring intents' routes).
    const matches = (segments: string[], route: string) => {
      const named = route.split('/');
      return named.length === segments.length && segments.every((segment, i) => segment === named[i] || /^\{.+\}$/.test(segment) || named[i] === PARAMETER);
    };
    const named = new Set<string>();
    for (const file of DOCS) {
      const text = readFileSync(path.join(root, file), 'utf8');
      for (const m of text.matchAll(/\b(GET|POST|PUT|PATCH|DELETE) +(\/[A-Za-z0-9_./{}:<>-]*)/g)) {
        // A parameter written as {name}, <name> or :name (and a trailing `.` or `:` of the prose) is one segment.
        const route = m[2]!.replace(/[.:]+$/, '').replace(/\{[^}/]*\}?|<[^>/]*>|:[A-Za-z]\w*/g, PARAMETER);
        named.add(`${file}: ${m[1]} ${route}`);
      }
    }
    const unknown = [...named].filter((entry) => {
      const [, method, route] = /^[^:]+: (\S+) (\S+)$/.exec(entry)!;
      if (NOT_IN_API.has(`${method} ${route}`)) return false;
      return !operations.some((op) => op.method === method && matches(op.segments, route!));
    });
    console.log(`${named.size} operations named in the docs, ${unknown.length} not in the API`);
    expect(unknown).toEqual([]);
  });
});
