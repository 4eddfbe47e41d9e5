// A run's input as the steps see it: attachments read into text first (a file is never stored).
import type { TenantScope } from '../tenants/tenant-scope.js';
import type { AppDeps } from '../deps.js';
import { AppError } from '../errors.js';
import { allowancesForPlan, limitsForPlan } from '../tenants/plan-limits.js';
import { countedInputSize } from './input-size.js';
import { AttachmentError, readAttachments } from './read-attachments.js';

const TRANSCRIBE_PROMPT =
  'Transcribe all text in this image exactly, in reading order. Answer with the text only; if there is no text, answer with nothing.';

/** Transcription through VISION_MODEL (metered like every model call), or null when none is configured. */
function visionTranscriber(deps: AppDeps, scope: TenantScope) {
  const model = deps.config.VISION_MODEL;
  if (!model) return null;
  return async (image: { bytes: Uint8Array; mimeType: string; fileName: string }): Promise<string> => {
    const answer = await deps.llm.completeChat(deps.orm.em.fork(), {
      usage: { tenantId: scope.tenantId, environmentId: scope.environmentId, kind: 'attachment_transcription', domain: null, intent: null },
      model,
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: TRANSCRIBE_PROMPT },
            { type: 'image_url', image_url: { url: `data:${image.mimeType};base64,${Buffer.from(image.bytes).toString('base64')}` } },
          ],
        },
      ],
      countsAsRequest: false,
    });
    return answer.content ?? '';
  };
}

/**
 * The input a run starts with: attachments read into text (their own limits: 413 PAYLOAD_TOO_LARGE),
 * then the rest held to the plan's run_input_bytes (413 PAYLOAD_TOO_LARGE naming the limit), since
 * the whole input is stored with the run and every template and expression of the run can read it.
 * The text read from the files is not counted there (input-size.ts): the specification's attachment
 * limits hold on every plan.
 */
export async function prepareRunInput(deps: AppDeps, scope: TenantScope, input: Record<string, unknown>): Promise<Record<string, unknown>> {
  let prepared = input;
  if (Array.isArray(input.attachments)) {
    try {
      prepared = await readAttachments(input, { transcriptionAllowed: allowancesForPlan(scope.plan).attachment_transcription, transcribeWithModel: visionTranscriber(deps, scope) });
    } catch (err) {
      if (err instanceof AttachmentError) throw new AppError(err.code, err.message, err.details);
      throw err;
    }
  }
  const max = limitsForPlan(scope.plan, deps.config.PLAN_LIMITS).run_input_bytes;
  if (countedInputSize(prepared, max) > max) {
    throw new AppError('PAYLOAD_TOO_LARGE', `The run input is larger than the ${max} bytes a run may start with${prepared !== input ? ' (the text read from attachments not counted)' : ''}`, {
      limit: 'run_input_bytes', max,
    });
  }
  return prepared;
}
