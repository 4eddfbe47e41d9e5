// The steps a run executes: a deployed version's (kept per workflow and version in this process,
// since versions never change) or, for test runs, the run's own copy of the draft.
import type { AppDeps } from '../deps.js';
import { notFound } from '../errors.js';
import type { StepDef } from './step-types.js';
import { findVersionSteps } from './store/workflow-versions.js';

/** The steps of a deployed version, kept per (workflow, version): versions never change. */
const versionSteps = new Map<string, StepDef[]>();
const VERSION_CACHE_MAX = 500;

export async function loadVersionSteps(deps: AppDeps, tenantId: string, workflowId: string, version: number): Promise<StepDef[]> {
  const cacheKey = `${workflowId}:${version}`;
  const cached = versionSteps.get(cacheKey);
  if (cached) return cached;
  const row = await findVersionSteps<StepDef>(deps.sql, tenantId, workflowId, version);
  if (!row) throw notFound('Workflow version');
  if (versionSteps.size >= VERSION_CACHE_MAX) versionSteps.delete(versionSteps.keys().next().value!);
  versionSteps.set(cacheKey, row.steps);
  return row.steps;
}

/** The steps a stored run executes: its version's, or (test runs) its own copy. */
export const stepsOfRun = (deps: AppDeps, tenantId: string, workflowId: string, run: { version: number | null; definition: StepDef[] | null }) =>
  run.version !== null ? loadVersionSteps(deps, tenantId, workflowId, run.version) : Promise.resolve(run.definition ?? []);
