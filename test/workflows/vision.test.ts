// Image attachments transcribed by VISION_MODEL on plans that allow transcription.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer } from '../support/client.js';
import { startFakeLlm, type FakeLlm } from '../support/fake-llm.js';
import { adminHeaders, signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';

let t: TestServer;
let fake: FakeLlm;
let a: SignedUpTenant;

// A 1x1 transparent PNG.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64');

beforeAll(async () => {
  fake = await startFakeLlm();
  t = await startTestServer({ OPENAI_BASE_URL: fake.url, OPENAI_API_KEY: 'sk-test', DEFAULT_MODEL: 'gpt-4o-mini', VISION_MODEL: 'gpt-4o-mini', LLM_MAX_RETRIES: '0' });
  a = await signupTenant(t.api, { companyName: 'Vision' });
});
afterAll(async () => {
  await t?.close();
  await fake?.close();
});

describe('image attachments', () => {
  it('are refused on the trial plan and transcribed by the vision model on a paid plan', async () => {
    const key = { headers: bearer(a.apiKey) };
    const created = await t.api.post('/v1/workflows', {
      name: 'Receipts',
      steps: [
        { id: 'start', step_type: 'trigger', config: { trigger_subtype: 'manual' } },
        { id: 'done', step_type: 'end', config: { output: '{{trigger.attachments_text}}' } },
      ],
    }, key);
    await t.api.post(`/v1/workflows/${created.body.data.workflow.id}/deploy`, undefined, key);
    const body = { input: { attachments: [{ file_name: 'receipt.png', file_base64: PNG.toString('base64') }] } };
    const trial = await t.api.post('/v1/workflows/receipts/run', body, key);
    expect(trial.status).toBe(422);
    expect(trial.body.error.code).toBe('ATTACHMENT_UNREADABLE');
    expect(fake.chatRequests()).toHaveLength(0);

    expect((await t.api.patch(`/admin/tenants/${a.tenantId}`, { billingPlan: 'starter' }, { headers: adminHeaders })).status).toBe(200);
    fake.script(['TOTAL 12.50 EUR']);
    const paid = await t.api.post('/v1/workflows/receipts/run', body, key);
    expect(paid.status, paid.text).toBe(200);
    expect(paid.body.data.output).toContain('TOTAL 12.50 EUR');
    const sent = fake.chatRequests()[0].body;
    expect(sent.model).toBe('gpt-4o-mini');
    expect(sent.messages[0].content[1]).toMatchObject({ type: 'image_url', image_url: { url: expect.stringMatching(/^data:image\/png;base64,/) } });
    const usage = await t.sql<{ kind: string }>(`select kind from usage_events where tenant_id = $1`, [a.tenantId]);
    expect(usage).toEqual([{ kind: 'attachment_transcription' }]);
  });
});
