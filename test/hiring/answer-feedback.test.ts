// hiring/answer-feedback over HTTP with the IntentRequest's own fields: `message` carries the answer
// when `answer` is absent, and `question` may be left out; what reaches the model says which is which.
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { validateWithSchema } from '../../server/common/json-schema.js';
import { getHiringIntent } from '../../server/hiring/hiring-intents.js';
import { bearer } from '../support/client.js';
import { expectError } from '../support/expect-error.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let fake: FakeLlm;
let tenant: SignedUpTenant;

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0' });
  tenant = await signupTenant(t.api);
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});
afterEach(() => fake.reset());

const run = (input: Record<string, unknown>) => t.api.post('/v1/hiring/answer-feedback', { input }, { headers: bearer(tenant.apiKey) });
/** The user message of the last model call, and the section `tag` in it. */
const sentPrompt = () => fake.chatRequests().at(-1)!.body.messages[1].content as string;
const section = (prompt: string, tag: string) => prompt.match(new RegExp(`<${tag}>\\n([\\s\\S]*?)\\n</${tag}>`))?.[1];

describe('POST /v1/hiring/answer-feedback', () => {
  it('runs from user_id and message alone: the message is the answer, the question is left empty', async () => {
    const answer = 'Two engineers disagreed on the database; I ran a one-week spike and we chose PostgreSQL.';
    const res = await run({ user_id: 'cand-1', message: answer });
    expect(res.status, res.text).toBe(200);
    expect(res.body.metadata).toMatchObject({ intent: 'answer-feedback', domain: 'hiring', cached: false });
    expect(validateWithSchema(getHiringIntent('answer-feedback')!.outputSchema, res.body.data.output)).toEqual([]);

    const prompt = sentPrompt();
    expect(section(prompt, 'message')).toBe(answer);
    expect(section(prompt, 'answer')).toBe('');
    expect(section(prompt, 'question')).toBe('');
    const system = fake.chatRequests().at(-1)!.body.messages[0].content as string;
    expect(system).toContain('when <answer> is empty, <message> holds the answer');
  });

  it('a question with the message is passed on; answer and question as before still work', async () => {
    const withQuestion = await run({ user_id: 'cand-2', question: 'Tell me about a conflict.', message: 'I listened to both sides first.' });
    expect(withQuestion.status, withQuestion.text).toBe(200);
    expect(section(sentPrompt(), 'question')).toBe('Tell me about a conflict.');
    expect(section(sentPrompt(), 'message')).toBe('I listened to both sides first.');

    const classic = await run({ user_id: 'cand-3', question: 'Why this role?', answer: 'I like building payment systems.', job_title: 'Backend Engineer' });
    expect(classic.status, classic.text).toBe(200);
    expect(section(sentPrompt(), 'answer')).toBe('I like building payment systems.');
    expect(section(sentPrompt(), 'message')).toBe('');
    expect(section(sentPrompt(), 'job_title')).toBe('Backend Engineer');
  });

  it('without any answer (no answer, no message, or only blank ones) it is 400 INVALID_INPUT and no model is called', async () => {
    for (const input of [
      { user_id: 'cand-4' },
      { user_id: 'cand-4', question: 'Tell me about a conflict.' },
      { user_id: 'cand-4', message: '   ' },
      { user_id: 'cand-4', answer: '\n', message: '' },
    ]) {
      const err = expectError(await run(input), 400, 'INVALID_INPUT');
      expect((err.details.issues as { path: string }[]).every((i) => i.path.startsWith('input')), JSON.stringify(input)).toBe(true);
    }
    expect(fake.chatRequests()).toEqual([]);
  });
});
