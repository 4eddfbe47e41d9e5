// Workflows set up through the real API for tests: created and, unless told otherwise, deployed.
import type { ApiClient } from './client.js';
import { bearer } from './client.js';

/** The manual trigger most test workflows start with. */
export const MANUAL_TRIGGER = { id: 'start', step_type: 'trigger', config: { trigger_subtype: 'manual' } };

export interface TestWorkflow {
  id: string;
  workflow_key: string;
  /** A webhook workflow's secret, from its first deploy. */
  webhook_secret?: string;
}

/** Creates a workflow of `steps` and deploys it (a draft when `deploy` is false). */
export async function createWorkflow(api: ApiClient, apiKey: string, name: string, steps: unknown[], options: { deploy?: boolean } = {}): Promise<TestWorkflow> {
  const auth = { headers: bearer(apiKey) };
  const created = await api.post('/v1/workflows', { name, steps }, auth);
  if (created.status !== 201) throw new Error(`creating workflow ${name} failed: ${created.status} ${created.text}`);
  const workflow = created.body.data.workflow as { id: string; workflow_key: string };
  if (options.deploy === false) return { id: workflow.id, workflow_key: workflow.workflow_key };
  const deployed = await api.post(`/v1/workflows/${workflow.id}/deploy`, undefined, auth);
  if (deployed.status !== 200) throw new Error(`deploying workflow ${name} failed: ${deployed.status} ${deployed.text}`);
  return { id: workflow.id, workflow_key: workflow.workflow_key, webhook_secret: deployed.body.data.webhook_secret };
}
