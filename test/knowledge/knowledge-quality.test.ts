// Retrieval quality on a written HR handbook (test/knowledge/corpus.ts): recall@5 and MRR@5 at
// document level (a question counts as answered when a chunk of its expected document is in the top
// five), through the real endpoint. Two configurations: lexical only (full-text + trigram) and with
// embeddings. By default the embeddings come from the fake provider (word-hash vectors): they only
// reward shared words, so they measure the plumbing more than semantic recall. Point it at a real
// embedding model with KNOWLEDGE_EVAL_BASE_URL, KNOWLEDGE_EVAL_API_KEY and KNOWLEDGE_EVAL_MODEL.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { CORPUS, QUESTIONS, type CorpusQuestion } from './corpus.js';
import { insertDocument } from './seed.js';

const REAL = process.env.KNOWLEDGE_EVAL_MODEL
  ? { baseURL: process.env.KNOWLEDGE_EVAL_BASE_URL ?? 'https://api.openai.com/v1', apiKey: process.env.KNOWLEDGE_EVAL_API_KEY ?? '', model: process.env.KNOWLEDGE_EVAL_MODEL }
  : null;
const FAKE_MODEL = 'fake-embedding';

// Floors a little under the figures measured when this check was written (see the README): a
// ranking regression fails them.
const FLOORS = {
  lexical: { recall: 0.9, mrr: 0.72 },
  embedded: { recall: 0.85, mrr: 0.68 },
};

let t: TestServer;
let fake: FakeLlm | null = null;
let tenant: SignedUpTenant;
const collections = { lexical: '', embedded: '' };
/** document id -> corpus key */
const keyOf = new Map<string, string>();

async function embedAll(texts: string[]): Promise<Buffer[]> {
  const client = new OpenAI({ baseURL: REAL!.baseURL, apiKey: REAL!.apiKey || 'no-key' });
  const out: Buffer[] = [];
  for (let i = 0; i < texts.length; i += 64) {
    const res = await client.embeddings.create({ model: REAL!.model, input: texts.slice(i, i + 64), encoding_format: 'float' });
    for (const item of res.data) out.push(Buffer.from(new Float32Array(item.embedding).buffer));
  }
  return out;
}

beforeAll(async () => {
  if (!REAL) fake = await startFakeLlm();
  const provider = REAL ? { OPENAI_BASE_URL: REAL.baseURL, OPENAI_API_KEY: REAL.apiKey || 'no-key' } : { OPENAI_BASE_URL: fake!.url, OPENAI_API_KEY: 'sk-test' };
  t = await startTestServer({ ...provider, DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0' });
  tenant = await signupTenant(t.api);
  for (const name of ['lexical', 'embedded'] as const) {
    const res = await t.api.post('/v1/collections', { slug: `handbook-${name}`, label: name, domain_keys: ['hiring'] }, { headers: bearer(tenant.apiKey) });
    expect(res.status, res.text).toBe(201);
    collections[name] = res.body.data.collection.id;
  }
  for (const doc of CORPUS) {
    const plain = await insertDocument(t.sql, { tenantId: tenant.tenantId, name: doc.name, category: doc.category, collectionIds: [collections.lexical], chunks: doc.paragraphs });
    keyOf.set(plain.documentId, doc.key);
    const embedded = await insertDocument(t.sql, {
      tenantId: tenant.tenantId,
      name: doc.name,
      category: doc.category,
      collectionIds: [collections.embedded],
      chunks: doc.paragraphs,
      embeddingModel: REAL ? REAL.model : FAKE_MODEL,
    });
    keyOf.set(embedded.documentId, doc.key);
    if (REAL) {
      const vectors = await embedAll(doc.paragraphs);
      for (const [i, id] of embedded.chunkIds.entries()) await t.sql('update document_chunks set embedding = $1 where id = $2', [vectors[i], id]);
    }
  }
}, 300_000);
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

interface Figures {
  recallAt5: number;
  mrrAt5: number;
  byKind: Record<string, { questions: number; recallAt5: number; mrrAt5: number }>;
  misses: string[];
}

async function evaluate(collectionId: string): Promise<Figures> {
  let found = 0;
  let reciprocal = 0;
  const kinds: Record<string, { questions: number; found: number; reciprocal: number }> = {};
  const misses: string[] = [];
  for (const q of QUESTIONS as CorpusQuestion[]) {
    const res = await t.api.post('/v1/domains/hiring/knowledge/query', { query: q.question, top_k: 5, collection_ids: [collectionId] }, { headers: bearer(tenant.apiKey) });
    expect(res.status, res.text).toBe(200);
    const keys = (res.body.data.results as { document_id: string }[]).map((r) => keyOf.get(r.document_id));
    const rank = keys.indexOf(q.expected) + 1;
    const kind = (kinds[q.kind] ??= { questions: 0, found: 0, reciprocal: 0 });
    kind.questions++;
    if (rank > 0) {
      found++;
      reciprocal += 1 / rank;
      kind.found++;
      kind.reciprocal += 1 / rank;
    } else {
      misses.push(`${q.question} -> expected ${q.expected}, got ${keys.slice(0, 3).join(', ') || 'nothing'}`);
    }
  }
  const n = QUESTIONS.length;
  return {
    recallAt5: found / n,
    mrrAt5: reciprocal / n,
    byKind: Object.fromEntries(Object.entries(kinds).map(([k, v]) => [k, { questions: v.questions, recallAt5: v.found / v.questions, mrrAt5: v.reciprocal / v.questions }])),
    misses,
  };
}

function report(label: string, f: Figures) {
  const kinds = Object.entries(f.byKind)
    .map(([k, v]) => `${k} (${v.questions}): recall@5 ${v.recallAt5.toFixed(2)}, MRR ${v.mrrAt5.toFixed(2)}`)
    .join('; ');
  console.log(`[knowledge quality] ${label}: recall@5 ${f.recallAt5.toFixed(3)}, MRR@5 ${f.mrrAt5.toFixed(3)} over ${QUESTIONS.length} questions / ${CORPUS.length} documents\n  ${kinds}\n  misses:\n    ${f.misses.join('\n    ') || 'none'}`);
}

describe('knowledge retrieval quality', () => {
  it('has a corpus of at least 30 documents and 50 questions, each answerable', () => {
    expect(CORPUS.length).toBeGreaterThanOrEqual(30);
    expect(QUESTIONS.length).toBeGreaterThanOrEqual(50);
    const keys = new Set(CORPUS.map((d) => d.key));
    expect(keys.size).toBe(CORPUS.length);
    for (const q of QUESTIONS) expect(keys.has(q.expected), q.expected).toBe(true);
  });

  it('full-text + trigram only', async () => {
    const figures = await evaluate(collections.lexical);
    report('lexical (full-text + trigram)', figures);
    expect(figures.recallAt5).toBeGreaterThanOrEqual(FLOORS.lexical.recall);
    expect(figures.mrrAt5).toBeGreaterThanOrEqual(FLOORS.lexical.mrr);
  });

  it(`with embeddings (${REAL ? REAL.model : 'fake word-hash provider'})`, async () => {
    const figures = await evaluate(collections.embedded);
    report(`hybrid with embeddings (${REAL ? REAL.model : 'fake word-hash embeddings'})`, figures);
    if (!REAL) expect(fake!.requests.filter((r) => r.path === '/v1/embeddings').length).toBeGreaterThan(0);
    expect(figures.recallAt5).toBeGreaterThanOrEqual(FLOORS.embedded.recall);
    expect(figures.mrrAt5).toBeGreaterThanOrEqual(FLOORS.embedded.mrr);
  });
});
