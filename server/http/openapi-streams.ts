// The Server-Sent Events routes (http/sse-route.ts), documented from the JSON run route each mirrors
// (same body, same refusals), with every event they send: `x-stream-events` on the media type names
// each event and its data schema, and a component per stream (`{event, data}`, one of the events)
// gives generated clients one type to narrow.
import type { OpenAPIObject } from 'trpc-to-openapi';
import { REQUEST_ID_HEADER } from './openapi-errors.js';

type SchemaNode = Record<string, any>;

const AGENT_STREAM_DESCRIPTION = `The same run as POST /v1/agents/{agentKey}/run, as Server-Sent Events. Refusals (auth, body, agent,
quota, session) are JSON envelopes with their status, before the stream opens. Then: \`run.started\`
\`{run_id, session_id, agent_key}\`, \`llm.delta\` \`{text}\` as the model writes, \`tool.started\` \`{name, input}\`,
\`tool.completed\` \`{name, output, error}\`, and last \`run.completed\` (status completed or needs_input) or
\`run.failed\` (any other status) whose data is the run endpoint's \`data\`; \`run.failed\` adds \`error\`, the run's
error as GET …/runs/{runId} shows it (e.g. \`{code: "LLM_PROVIDER_ERROR", reason: "stream_cut", …}\`), or null.
A provider that cuts the answer mid-stream ends the run \`failed\` with \`behavior_config.fallback\` as its
output: text streamed before the cut is not the answer. Each \`data:\` line is JSON; comment
lines (\`: ping\`) keep an idle stream open. A client that disconnects stops the run before its next step; the
run is recorded \`cancelled\`. Every event, as \`{event, data}\`, is an \`AgentRunStreamEvent\`.`;

const WORKFLOW_STREAM_DESCRIPTION = `The same run as POST /v1/workflows/{workflowIdOrKey}/run, as Server-Sent Events. Refusals (auth, body,
workflow, attachments) are JSON envelopes with their status, before the stream opens. Then: \`run.started\`
\`{run_id, conversation_id, workflow_key}\`, \`step.started\` \`{step_id, step_type, name}\` and \`step.completed\` (a trace
entry) per step, and last \`run.completed\`, \`run.waiting\` (needs_input or waiting), \`run.awaiting_approval\` or
\`run.failed\`, whose data is the run endpoint's \`data\` (or \`{status: "failed", error}\` when the run failed unexpectedly).
Each \`data:\` line is JSON. A client that disconnects does not stop the run: read it later with GET …/runs/{runId}.
Every event, as \`{event, data}\`, is a \`WorkflowRunStreamEvent\`.`;

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const strictObject = (properties: Record<string, unknown>) => ({ type: 'object', required: Object.keys(properties), additionalProperties: false, properties });
const STRING = { type: 'string' };

interface StreamEvent {
  description: string;
  data: SchemaNode;
}

function agentEvents(doc: OpenAPIObject): Record<string, StreamEvent> {
  // run.failed is the run endpoint's data plus the run's error, in one closed object.
  const failed = structuredClone(doc.components?.schemas?.AgentRunResult as SchemaNode);
  failed.properties.error = { type: ['object', 'null'], additionalProperties: true, description: 'The run\'s error (`code`, `message`, and for provider failures `reason`…), or null' };
  failed.required = [...failed.required, 'error'];
  return {
    'run.started': { description: 'The run was recorded', data: strictObject({ run_id: STRING, session_id: STRING, agent_key: STRING }) },
    'llm.delta': { description: 'Text the model wrote (after output guardrails)', data: strictObject({ text: STRING }) },
    'tool.started': { description: 'A tool call begins', data: strictObject({ name: STRING, input: {} }) },
    'tool.completed': { description: 'A tool call ended', data: strictObject({ name: STRING, output: {}, error: { type: ['string', 'null'] } }) },
    'run.completed': { description: 'Last: status completed or needs_input', data: ref('AgentRunResult') },
    'run.failed': { description: 'Last: any other status', data: failed },
  };
}

function workflowEvents(): Record<string, StreamEvent> {
  return {
    'run.started': { description: 'The run was recorded', data: strictObject({ run_id: STRING, conversation_id: STRING, workflow_key: STRING }) },
    'step.started': { description: 'A step begins', data: strictObject({ step_id: STRING, step_type: STRING, name: { type: ['string', 'null'] } }) },
    'step.completed': { description: 'A step ended: its trace entry', data: ref('WorkflowTraceEntry') },
    'run.completed': { description: 'Last: the run completed', data: ref('WorkflowRunResult') },
    'run.waiting': { description: 'Last: the run waits (needs_input or waiting)', data: ref('WorkflowRunResult') },
    'run.awaiting_approval': { description: 'Last: the run waits for an approval', data: ref('WorkflowRunResult') },
    'run.failed': {
      description: 'Last: failed, rejected or cancelled; `{status: "failed", error}` when the run failed unexpectedly',
      data: {
        anyOf: [
          ref('WorkflowRunResult'),
          strictObject({ status: { type: 'string', const: 'failed' }, error: strictObject({ code: STRING, message: STRING }) }),
        ],
      },
    },
  };
}

/** `{event, data}`, one of the events: what a client reading the stream gets per frame. */
function eventUnion(events: Record<string, StreamEvent>): SchemaNode {
  return {
    type: 'object',
    description: 'One Server-Sent Event: `event` is its `event:` line, `data` its `data:` line parsed as JSON.',
    oneOf: Object.entries(events).map(([name, event]) => ({
      type: 'object',
      description: event.description,
      required: ['event', 'data'],
      additionalProperties: false,
      properties: { event: { type: 'string', const: name }, data: event.data },
    })),
  };
}

/** The stream routes and their event components. */
export function streamRoutes(doc: OpenAPIObject): { paths: Record<string, unknown>; schemas: Record<string, SchemaNode> } {
  const paths: Record<string, unknown> = {};
  const schemas: Record<string, SchemaNode> = {};
  const streams = [
    {
      path: '/v1/agents/{agentKey}/run', operationId: 'agents-runStream', component: 'AgentRunStreamEvent', events: agentEvents(doc),
      summary: 'Run an active agent, streamed as Server-Sent Events', description: AGENT_STREAM_DESCRIPTION,
    },
    {
      path: '/v1/workflows/{workflowIdOrKey}/run', operationId: 'workflows-runStream', component: 'WorkflowRunStreamEvent', events: workflowEvents(),
      summary: 'Run the live workflow, streamed as Server-Sent Events', description: WORKFLOW_STREAM_DESCRIPTION,
    },
  ];
  for (const stream of streams) {
    const run = (doc.paths?.[stream.path] as Record<string, SchemaNode> | undefined)?.post;
    if (!run) continue;
    const { '200': _ok, '202': _accepted, ...errors } = run.responses as Record<string, unknown>;
    schemas[stream.component] = eventUnion(stream.events);
    paths[`${stream.path}/stream`] = {
      post: {
        ...structuredClone(run),
        operationId: stream.operationId,
        summary: stream.summary,
        description: stream.description,
        responses: {
          '200': {
            description: 'An event stream (the events are listed in `x-stream-events` and as the component named in the description)',
            headers: {
              ...REQUEST_ID_HEADER,
              'Cache-Control': { description: 'no-cache, no-transform', schema: { type: 'string' } },
              'X-Accel-Buffering': { description: 'no: reverse proxies (nginx) must not buffer the stream', schema: { type: 'string' } },
            },
            content: {
              'text/event-stream': {
                schema: {
                  type: 'string',
                  description: `Frames \`id: <n>\\nevent: <name>\\ndata: <JSON>\\n\\n\`, and \`: ping\` comment lines while idle. Each frame as \`{event, data}\` is a ${stream.component}.`,
                },
                'x-stream-event': ref(stream.component),
                'x-stream-events': Object.fromEntries(Object.entries(stream.events).map(([name, event]) => [name, { description: event.description, schema: event.data }])),
              },
            },
          },
          ...structuredClone(errors),
        },
      },
    };
  }
  return { paths, schemas };
}
