// The specification's attachment limits (10 files, 15 MB each, 18 MB a run) hold on every plan: the
// text read from the files is bounded apart from the caller's JSON input, which run_input_bytes
// limits, so a run within the attachment limits runs on the trial plan (run_input_bytes 2 MiB,
// run_state_bytes 8 MiB), sync or async, and a run's size stays bounded.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PLAN_LIMITS } from '../../server/tenants/plan-limits.js';
import { MAX_ATTACHMENT_BYTES, MAX_ATTACHMENT_TEXT_CHARS, MAX_ATTACHMENTS_TOTAL_BYTES } from '../../server/workflows/read-attachments.js';
import { makeDocx } from '../fixtures/make-files.js';
import { bearer } from '../support/client.js';
import { expectError } from '../support/expect-error.js';
import { signupTenant, type SignedUpTenant } from '../support/fixtures.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { waitFor } from '../support/wait-for.js';
import { createWorkflow, MANUAL_TRIGGER } from '../support/workflows.js';

const MB = 1024 * 1024;
const trial = DEFAULT_PLAN_LIMITS.trial;
let t: TestServer;
let a: SignedUpTenant;
let workflowId: string;

const key = () => ({ headers: bearer(a.apiKey) });
/** A text file of `bytes` bytes: lines of one repeated letter. */
const textFile = (name: string, bytes: number, letter = 'a') => {
  const line = `${letter.repeat(79)}\n`;
  const text = line.repeat(Math.ceil(bytes / line.length)).slice(0, bytes);
  return { file_name: name, file_base64: Buffer.from(text).toString('base64') };
};

beforeAll(async () => {
  t = await startTestServer();
  a = await signupTenant(t.api, { companyName: 'Attachment limits' });
  // The run reads every text (a CEL size over the combined text) and answers only small values.
  workflowId = (
    await createWorkflow(t.api, a.apiKey, 'Read attachments', [
      MANUAL_TRIGGER,
      { id: 'check', step_type: 'condition', config: { expression: 'size(trigger.attachments_text) > 0 && size(trigger.attachment_texts) == size(trigger.attachments)' }, on_success_ref: 'read', on_failure_ref: 'empty' },
      { id: 'read', step_type: 'end', config: { output: { note: '{{trigger.note}}' } } },
      { id: 'empty', step_type: 'end', config: { output: { note: 'no text' } } },
    ])
  ).id;
}, 120_000);
afterAll(() => t?.close());

describe('within the attachment limits, a trial run runs', () => {
  it('is the trial plan whose input limit is smaller than the attachments', () => {
    expect(trial.run_input_bytes).toBeLessThan(3 * MB);
    expect(trial.run_state_bytes).toBeLessThan(MAX_ATTACHMENTS_TOTAL_BYTES);
    expect(MAX_ATTACHMENT_TEXT_CHARS).toBeGreaterThanOrEqual(MAX_ATTACHMENTS_TOTAL_BYTES);
  });

  it('a 3 MB text attachment (sync: 200, completed)', async () => {
    const res = await t.api.post(`/v1/workflows/${workflowId}/run`, { input: { note: 'three', attachments: [textFile('three.txt', 3 * MB)] } }, key());
    expect(res.status, res.text.slice(0, 500)).toBe(200);
    expect(res.body.data.status, res.text.slice(0, 1000)).toBe('completed');
    expect(res.body.data.output).toMatchObject({ note: 'three' });
    const [stored] = await t.sql<{ chars: number }>(`select length(input->>'attachments_text') as chars from workflow_runs where id = $1`, [res.body.data.run_id]);
    expect(stored.chars).toBeGreaterThan(3 * MB);
  });

  it('ten files of 1.8 MB text each, 18 MB in all (async: 202, then completed)', { timeout: 120_000 }, async () => {
    const files = Array.from({ length: 10 }, (_, i) => textFile(`part-${i}.txt`, Math.floor(1.8 * MB), String.fromCharCode(97 + i)));
    const res = await t.api.post(`/v1/workflows/${workflowId}/run`, { mode: 'async', input: { note: 'ten', attachments: files } }, key());
    expect(res.status, res.text.slice(0, 500)).toBe(202);
    const run = await waitFor(async () => {
      const detail = await t.api.get(`/v1/workflows/${workflowId}/runs/${res.body.data.run_id}`, key());
      return ['completed', 'failed'].includes(detail.body.data.run.status) ? detail.body.data.run : null;
    }, 'the run to end', 90_000);
    expect(run.status, JSON.stringify(run.error)).toBe('completed');
    expect(run.output).toMatchObject({ note: 'ten' });
    expect(run.input.attachment_texts).toHaveLength(10);
    expect(run.input.attachment_texts.map((text: string) => text.length)).toEqual(Array.from({ length: 10 }, () => Math.floor(1.8 * MB)));
  });

  it('the same ten files in a sync run (200, completed)', { timeout: 120_000 }, async () => {
    const files = Array.from({ length: 10 }, (_, i) => textFile(`sync-${i}.txt`, Math.floor(1.8 * MB)));
    const res = await t.api.post(`/v1/workflows/${workflowId}/run`, { input: { note: 'sync ten', attachments: files } }, key());
    expect(res.status, res.text.slice(0, 500)).toBe(200);
    expect(res.body.data.status, res.text.slice(0, 1000)).toBe('completed');
  });
});

describe('what is still refused', () => {
  it('a file over 15 MB: 413', async () => {
    const res = await t.api.post(`/v1/workflows/${workflowId}/run`, { input: { attachments: [textFile('big.txt', MAX_ATTACHMENT_BYTES + 1)] } }, key());
    const error = expectError(res, 413, 'PAYLOAD_TOO_LARGE');
    expect(error.details).toMatchObject({ file_name: 'big.txt', limit_bytes: MAX_ATTACHMENT_BYTES });
  });

  it('files whose text is larger than 18 MB of text (compressed documents): 413 attachment_text_chars', { timeout: 120_000 }, async () => {
    const paragraphs = Array.from({ length: 2_000 }, (_, i) => `${String(i).padStart(4, '0')} ${'word '.repeat(1_000)}`);
    const docx = makeDocx('Long', paragraphs).toString('base64');
    const files = Array.from({ length: 2 }, (_, i) => ({ file_name: `long-${i}.docx`, file_base64: docx }));
    const res = await t.api.post(`/v1/workflows/${workflowId}/run`, { input: { attachments: files } }, key());
    const error = expectError(res, 413, 'PAYLOAD_TOO_LARGE');
    expect(error.details).toMatchObject({ limit: 'attachment_text_chars', max: MAX_ATTACHMENT_TEXT_CHARS, file_name: 'long-1.docx', attachment_index: 1 });
  });

  it("the caller's own JSON over run_input_bytes, attachments or not: 413 run_input_bytes", async () => {
    const res = await t.api.post(`/v1/workflows/${workflowId}/run`, { input: { note: 'n'.repeat(trial.run_input_bytes), attachments: [textFile('small.txt', 1000)] } }, key());
    const error = expectError(res, 413, 'PAYLOAD_TOO_LARGE');
    expect(error.details).toMatchObject({ limit: 'run_input_bytes', max: trial.run_input_bytes });
    const [count] = await t.sql<{ n: number }>('select count(*)::int as n from workflow_runs where workflow_id = $1 and input->>\'note\' is not null and length(input->>\'note\') > 1000', [workflowId]);
    expect(count.n).toBe(0);
  });
});
