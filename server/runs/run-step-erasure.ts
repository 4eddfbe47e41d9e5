// Erasing one end user: the step traces of their runs go with the runs, and the steps tell which
// other runs a run started (their ids are in the step's output), so those can go too.
import type { EntityManager } from '../../db/orm.js';
import type { RunKind } from './run-steps.js';
import { deleteStepsOfRuns, listStepOutputRefs } from './store/run-steps.js';

/** The ids (runs, agent sessions) the steps of these runs name in their output as `run_id` or `session_id`. */
export function listIdsNamedBySteps(em: EntityManager, tenantId: string, runKind: RunKind, runIds: string[]): Promise<string[]> {
  return listStepOutputRefs(em, tenantId, runKind, runIds);
}

/** Deletes the steps of these runs; how many. */
export function deleteRunSteps(em: EntityManager, tenantId: string, runKind: RunKind, runIds: string[]): Promise<number> {
  return deleteStepsOfRuns(em, tenantId, runKind, runIds);
}
