// The fake provider must satisfy the real openai SDK and produce schema-valid sample answers.
import { Ajv } from 'ajv';
import formatsModule from 'ajv-formats';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fakeEmbedding, sampleFromSchema, startFakeLlm, type FakeLlm } from './fake-llm.js';

let fake: FakeLlm;
let client: OpenAI;

beforeAll(async () => {
  fake = await startFakeLlm();
  client = new OpenAI({ baseURL: fake.url, apiKey: 'test-key', maxRetries: 0, timeout: 5_000 });
});
afterAll(() => fake?.close());
beforeEach(() => fake.reset());

const ajv = new Ajv({ strict: false, allErrors: true });
formatsModule.default(ajv);

const SCHEMAS: Record<string, object> = {
  'nested object with formats and enums': {
    type: 'object',
    required: ['name', 'email', 'level'],
    properties: {
      id: { type: 'string', format: 'uuid' },
      name: { type: 'string', minLength: 12 },
      email: { type: 'string', format: 'email' },
      when: { type: 'string', format: 'date-time' },
      level: { type: 'string', enum: ['junior', 'senior'] },
      address: { type: 'object', required: ['city'], properties: { city: { type: 'string' }, zip: { type: 'string', maxLength: 3 } }, additionalProperties: false },
    },
    additionalProperties: false,
  },
  'numbers and bounds': {
    type: 'object',
    required: ['score', 'years', 'ratio', 'negative'],
    properties: {
      score: { type: 'integer', minimum: 0, maximum: 100 },
      years: { type: 'integer', exclusiveMinimum: 5 },
      ratio: { type: 'number', minimum: 0.25, maximum: 0.75 },
      negative: { type: 'number', maximum: -10 },
    },
  },
  'arrays, unique items and tuples': {
    type: 'object',
    required: ['skills', 'pair', 'flags'],
    properties: {
      skills: { type: 'array', minItems: 3, uniqueItems: true, items: { type: 'string' } },
      pair: { type: 'array', prefixItems: [{ type: 'string' }, { type: 'integer' }], minItems: 2 },
      flags: { type: 'array', items: { type: 'boolean' }, maxItems: 1 },
      matrix: { type: 'array', items: { type: 'array', items: { type: 'number' }, minItems: 2 } },
    },
  },
  'nullable, oneOf, anyOf, allOf, const': {
    type: 'object',
    required: ['maybe', 'choice', 'either', 'merged', 'fixed'],
    properties: {
      maybe: { type: ['string', 'null'], minLength: 2 },
      choice: { oneOf: [{ type: 'object', required: ['kind'], properties: { kind: { const: 'a' } } }, { type: 'string' }] },
      either: { anyOf: [{ type: 'integer', minimum: 3 }, { type: 'null' }] },
      merged: { allOf: [{ type: 'object', required: ['a'], properties: { a: { type: 'string' } } }, { required: ['b'], properties: { b: { type: 'boolean' } } }] },
      fixed: { const: 42 },
    },
  },
  'top-level array': { type: 'array', items: { type: 'object', required: ['q'], properties: { q: { type: 'string' } } }, minItems: 2 },
};

describe('sampleFromSchema', () => {
  for (const [name, schema] of Object.entries(SCHEMAS)) {
    it(`satisfies: ${name}`, () => {
      const sample = sampleFromSchema(schema);
      const validate = ajv.compile(schema);
      expect(validate(sample), JSON.stringify(validate.errors)).toBe(true);
    });
  }

  it('puts required properties first and includes the optional ones', () => {
    const sample = sampleFromSchema({ type: 'object', required: ['b'], properties: { a: { type: 'string' }, b: { type: 'integer' } } });
    expect(Object.keys(sample as object)).toEqual(['b', 'a']);
  });
});

describe('chat completions through the SDK', () => {
  it('answers a json_schema request with a schema-valid object, and counts tokens', async () => {
    const schema = SCHEMAS['nested object with formats and enums'];
    const completion = await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'x'.repeat(40) }],
      response_format: { type: 'json_schema', json_schema: { name: 'profile', schema: schema as Record<string, unknown>, strict: false } },
    });
    const answer = JSON.parse(completion.choices[0].message.content!);
    expect(ajv.validate(schema, answer)).toBe(true);
    expect(completion.model).toBe('fake-model');
    expect(completion.usage?.prompt_tokens).toBe(10);
    expect(completion.usage?.completion_tokens).toBe(Math.ceil(completion.choices[0].message.content!.length / 4));
    expect(fake.requests[0].headers.authorization).toBe('Bearer test-key');
    expect(fake.requests[0].body.response_format.json_schema.name).toBe('profile');
  });

  it('echoes text without a schema and plays a scripted queue, then falls back', async () => {
    fake.script(['first', { content: { ok: true } }]);
    const ask = async () =>
      (await client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'hello' }] })).choices[0].message.content;
    expect(await ask()).toBe('first');
    expect(await ask()).toBe('{"ok":true}');
    expect(await ask()).toBe('echo: hello');
  });

  it('returns scripted tool calls', async () => {
    fake.script(() => ({ tool_calls: [{ name: 'lookup', arguments: { id: 7 } }] }));
    const completion = await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'find 7' }],
      tools: [{ type: 'function', function: { name: 'lookup', parameters: { type: 'object', properties: { id: { type: 'integer' } } } } }],
    });
    const choice = completion.choices[0];
    expect(choice.finish_reason).toBe('tool_calls');
    const call = choice.message.tool_calls![0];
    expect(call.type === 'function' && call.function).toEqual({ name: 'lookup', arguments: '{"id":7}' });
  });

  it('streams deltas with usage in the last chunk', async () => {
    fake.script(['a streamed answer that spans several chunks']);
    const stream = await client.chat.completions.create({
      model: 'fake-model',
      messages: [{ role: 'user', content: 'stream please' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let chunks = 0;
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.choices[0]?.delta?.content ?? '';
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe('a streamed answer that spans several chunks');
    expect(chunks).toBeGreaterThan(3);
    expect(usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 11, total_tokens: 15 });
  });

  it('streams tool calls the SDK can assemble', async () => {
    fake.script([{ tool_calls: [{ id: 'call_x', name: 'search', arguments: { query: 'long arguments here' } }] }]);
    const runner = client.chat.completions.stream({ model: 'fake-model', messages: [{ role: 'user', content: 'go' }] });
    const final = await runner.finalChatCompletion();
    const call = final.choices[0].message.tool_calls![0];
    expect(call.id).toBe('call_x');
    expect(call.type === 'function' && JSON.parse(call.function.arguments)).toEqual({ query: 'long arguments here' });
  });

  it('injects failures: the SDK retries a 500 and surfaces a persistent 429', async () => {
    const retrying = new OpenAI({ baseURL: fake.url, apiKey: 'test-key', maxRetries: 1, timeout: 5_000 });
    fake.fail(1, 500);
    const ok = await retrying.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'hi' }] });
    expect(ok.choices[0].message.content).toBe('echo: hi');
    expect(fake.requests).toHaveLength(2);

    fake.fail(2, 429);
    await expect(retrying.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'hi' }] })).rejects.toMatchObject({ status: 429 });
    expect(fake.requests).toHaveLength(4);
  });

  it('hangs past a client timeout', async () => {
    fake.fail(1, 'hang');
    await expect(client.chat.completions.create({ model: 'fake-model', messages: [{ role: 'user', content: 'hi' }] }, { timeout: 200 })).rejects.toBeInstanceOf(
      OpenAI.APIConnectionTimeoutError,
    );
  });
});

describe('embeddings and models through the SDK', () => {
  const cosine = (a: number[], b: number[]) => a.reduce((s, v, i) => s + v * b[i], 0);

  it('returns deterministic unit vectors for batched input (base64 decoded by the SDK)', async () => {
    const res = await client.embeddings.create({ model: 'fake-embedding', input: ['senior typescript engineer', 'typescript engineer', 'pastry chef in Lyon'] });
    expect(fake.requests[0].body.encoding_format).toBe('base64');
    expect(res.data).toHaveLength(3);
    const [a, b, c] = res.data.map((d) => d.embedding);
    expect(a).toHaveLength(64);
    for (const v of [a, b, c]) expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    for (let i = 0; i < 64; i++) expect(a[i]).toBeCloseTo(fakeEmbedding('senior typescript engineer')[i], 5);
    // Shared words make vectors closer: good enough for retrieval tests.
    expect(cosine(a, b)).toBeGreaterThan(cosine(a, c));
    expect(res.usage.prompt_tokens).toBeGreaterThan(0);
  });

  it('honours dimensions and float encoding', async () => {
    const res = await client.embeddings.create({ model: 'fake-embedding', input: 'hello world', dimensions: 16, encoding_format: 'float' });
    expect(res.data[0].embedding).toEqual(fakeEmbedding('hello world', 16));
  });

  it('lists models', async () => {
    const list = await client.models.list();
    expect(list.data.map((m) => m.id)).toContain('fake-model');
  });
});
