// What other folders may use of the online evaluation queue. Only this folder imports its store/
// (no-foreign-store in .dependency-cruiser.cjs).
export { deleteRuleOnlineSamples as forgetRuleSamples, listTenantsWithSamples, takeOnlineSamples as takeQueuedSamples, type TakenSample as QueuedSample } from './store/online-samples.js';
