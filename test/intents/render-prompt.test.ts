// Prompt templates go through the one template engine (server/common/templates.ts): the prompt's
// own placeholders are filled, anything else in braces stays as written, and no path reaches a
// prototype.
import { describe, expect, it } from 'vitest';
import { MAX_PROMPT_CHARS, renderPrompt } from '../../server/intents/render-prompt.js';

describe('renderPrompt', () => {
  it('fills input paths, context and history; objects become JSON, missing values empty', () => {
    const text = renderPrompt('Role: {{ input.job.title }} / {{input.skills}} / {{input.none}} / {{context}} / {{history}}', {
      input: { job: { title: 'Nurse' }, skills: ['triage', 'care'] },
      context: 'CTX',
    });
    expect(text).toBe('Role: Nurse / ["triage","care"] /  / CTX / ');
  });

  it('leaves every other placeholder as written', () => {
    expect(renderPrompt('{{input}} {{steps.x}} {{input[0]}} {{ other }}', { input: { a: 1 } })).toBe('{{input}} {{steps.x}} {{input[0]}} {{ other }}');
  });

  it('reaches own properties only', () => {
    expect(renderPrompt('[{{input.constructor}}][{{input.__proto__}}][{{input.a.toString}}]', { input: { a: 'x' } })).toBe('[][][]');
  });
});

describe('the rendered prompt\'s size', () => {
  it('is checked before it is built: a template repeating a large field is 413 PAYLOAD_TOO_LARGE', () => {
    const template = '{{input.text}}'.repeat(5_000);
    const big = 'x'.repeat(1_000_000);
    expect(() => renderPrompt(template, { input: { text: big } })).toThrow(
      expect.objectContaining({ code: 'PAYLOAD_TOO_LARGE', status: 413, details: { max_prompt_chars: MAX_PROMPT_CHARS } }),
    );
    // (Built first, 5,000 copies of 1 MB would be 5 GB: it stops at the third.)
    expect(renderPrompt('{{input.text}}{{input.text}}', { input: { text: 'x'.repeat(MAX_PROMPT_CHARS / 2) } })).toHaveLength(MAX_PROMPT_CHARS);
  });
});
