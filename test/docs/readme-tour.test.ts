// The README's five-minute tour, run as written: every curl request of the tour's shell blocks is
// sent to a real server (with a fake model provider) and must answer 2xx, and every `liya` command
// must exit 0. Ids the README leaves as <placeholders> are taken from the previous answers.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runLiya } from '../support/cli.js';
import { parseCurl, splitCommands } from './doc-blocks.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let fake: FakeLlm;
let dir: string;

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0' });
  dir = await mkdtemp(path.join(os.tmpdir(), 'liya-tour-'));
});

afterAll(async () => {
  await t?.close();
  await fake?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The shell blocks of the README's "A five-minute tour" section. */
async function readTourBlocks(): Promise<string[]> {
  const readme = await readFile(path.join(import.meta.dirname, '../../README.md'), 'utf8');
  const start = readme.indexOf('\n## A five-minute tour');
  const end = readme.indexOf('\n## ', start + 1);
  const section = readme.slice(start, end === -1 ? undefined : end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
}

describe('README five-minute tour', () => {
  it('runs every request and command of the tour', { timeout: 120_000 }, async () => {
    const blocks = await readTourBlocks();
    expect(blocks.length).toBeGreaterThanOrEqual(5);
    const vars: Record<string, string> = {};
    const ids: Record<string, string> = {};
    const base = new URL(t.url);
    let requests = 0;
    let cliCommands = 0;
    for (const block of blocks) {
      for (const words of splitCommands(block, vars)) {
        if (words[0] === 'export') {
          for (const assignment of words.slice(1)) {
            const eq = assignment.indexOf('=');
            const name = assignment.slice(0, eq);
            // The key and URL the tour tells the reader to keep come from this run.
            if (name === 'LIYA_KEY') vars.LIYA_KEY = ids.apiKey!;
            else if (name === 'LIYA_URL') vars.LIYA_URL = t.url;
            else vars[name] = assignment.slice(eq + 1);
          }
        } else if (words[0] === 'curl') {
          const request = parseCurl(words);
          // The README's requests go to localhost:3000; this server listens elsewhere.
          const pathAndQuery = request.url.replace(/^(https?:\/\/)?[^/]+/, '').replace(/<(\w+)>/g, (_, name: string) => ids[name] ?? `missing-${name}`);
          const url = new URL(pathAndQuery, base);
          let body = request.body?.replace(/<(\w+)>/g, (_, name: string) => ids[name] ?? `missing-${name}`);
          const res = await fetch(url, { method: request.method, headers: request.headers, body });
          const text = await res.text();
          expect(res.status, `${request.method} ${url.pathname}: ${text.slice(0, 300)}`).toBeGreaterThanOrEqual(200);
          expect(res.status, `${request.method} ${url.pathname}: ${text.slice(0, 300)}`).toBeLessThan(300);
          requests++;
          body = undefined;
          const data = JSON.parse(text).data;
          if (data?.apiKey) ids.apiKey = data.apiKey;
          if (data?.templates) {
            const templates = data.templates as { id: string; intent_key?: string }[];
            ids.templateId = (templates.find((x) => x.intent_key === 'candidate-screening') ?? templates[0]!).id;
          }
          if (data?.dataset?.id) ids.datasetId = data.dataset.id;
          if (data?.suite?.id) ids.suiteId = data.suite.id;
          if (data?.run?.id && url.pathname.startsWith('/v1/evals/')) ids.runId = data.run.id;
        } else if (words[0] === 'liya') {
          // Optional flags in [brackets] are left out, except --yes (no one answers a prompt here);
          // the project folder is a temporary one instead of ./liya.
          const args: string[] = [];
          for (let i = 1; i < words.length; i++) {
            const w = words[i]!;
            if (w.startsWith('[')) {
              let group = w;
              while (!group.endsWith(']')) group += ` ${words[++i]}`;
              if (group === '[--yes]') args.push('--yes');
            } else args.push(w === 'liya' && words[i - 1] === '--dir' ? dir : w);
          }
          const run = await runLiya(args, { env: { LIYA_URL: vars.LIYA_URL, LIYA_API_KEY: vars.LIYA_API_KEY } });
          expect(run.code, `liya ${args.join(' ')}: ${run.stdout}\n${run.stderr}`).toBe(0);
          cliCommands++;
        }
      }
    }
    expect(requests).toBeGreaterThanOrEqual(10);
    expect(cliCommands).toBe(3);
  });
});
