// What other folders may use of the job queue: enqueueing and removing jobs. Only this folder
// imports its store/ (no-foreign-store in .dependency-cruiser.cjs); other folders come here, so a
// store can change its statements, split or merge without its callers noticing.
export { enqueue, enqueueWith, jobKeyOf, removeJob } from './store/job-queue.js';
