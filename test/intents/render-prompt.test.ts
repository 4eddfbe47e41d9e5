// Prompt templates go through the one template engine (server/common/templates.ts): the prompt's
// own placeholders are filled, anything else in braces stays as written, and no path reaches a
// prototype.
import { describe, expect, it } from 'vitest';
import { renderPrompt } from '../../server/intents/render-prompt.js';

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
