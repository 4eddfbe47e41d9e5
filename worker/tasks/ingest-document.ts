import type { Task } from 'graphile-worker';
import type { AppDeps } from '../../server/deps.js';
import { runIngestionJob } from '../../server/documents/ingest-document.js';
import { ingestDocumentJob } from '../../server/jobs/contracts.js';

/** The job's state lives in ingestion_jobs, so a repeated run is harmless. */
export const ingestDocumentTask = (deps: AppDeps): Task => async (raw, helpers) => {
  const parsed = ingestDocumentJob.payload.safeParse(raw);
  if (!parsed.success) return; // malformed payloads are dropped, not retried
  // Transient failures are retried by the runner; the last attempt records the failure on the job.
  await runIngestionJob(deps, parsed.data.jobId, { finalAttempt: helpers.job.attempts >= helpers.job.max_attempts });
};
