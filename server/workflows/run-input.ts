// A run's input as the steps see it: attachments read into text first (a file is never stored).
import type { AgentRunScope } from '../agents/run-agent.js';
import type { AppDeps } from '../deps.js';
import { AppError } from '../errors.js';
import { AttachmentError, readAttachments } from './read-attachments.js';

/** Plans that may have images and scanned pages transcribed. */
const TRANSCRIPTION_PLANS = new Set(['starter', 'pro', 'enterprise']);

export async function prepareRunInput(deps: AppDeps, scope: AgentRunScope, input: Record<string, unknown>): Promise<Record<string, unknown>> {
  if (!Array.isArray(input.attachments)) return input;
  try {
    return await readAttachments(input, { transcriptionAllowed: TRANSCRIPTION_PLANS.has(scope.plan), transcribeWithModel: null });
  } catch (err) {
    if (err instanceof AttachmentError) throw new AppError(err.code, err.message, err.details);
    throw err;
  }
}
