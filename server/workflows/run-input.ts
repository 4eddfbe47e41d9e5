// A run's input as the steps see it: attachments read into text first (a file is never stored).
import type { AgentRunScope } from '../agents/run-agent.js';
import type { AppDeps } from '../deps.js';
import { AppError } from '../errors.js';
import { AttachmentError, readAttachments } from './read-attachments.js';

/** Plans that may have images and scanned pages transcribed. */
const TRANSCRIPTION_PLANS = new Set(['starter', 'pro', 'enterprise']);

const TRANSCRIBE_PROMPT =
  'Transcribe all text in this image exactly, in reading order. Answer with the text only; if there is no text, answer with nothing.';

/** Transcription through VISION_MODEL (metered like every model call), or null when none is configured. */
function visionTranscriber(deps: AppDeps, scope: AgentRunScope) {
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

export async function prepareRunInput(deps: AppDeps, scope: AgentRunScope, input: Record<string, unknown>): Promise<Record<string, unknown>> {
  if (!Array.isArray(input.attachments)) return input;
  try {
    return await readAttachments(input, { transcriptionAllowed: TRANSCRIPTION_PLANS.has(scope.plan), transcribeWithModel: visionTranscriber(deps, scope) });
  } catch (err) {
    if (err instanceof AttachmentError) throw new AppError(err.code, err.message, err.details);
    throw err;
  }
}
