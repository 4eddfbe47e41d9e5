// What other folders may use of prompts and their versions. Only this folder imports its store/
// (no-foreign-store in .dependency-cruiser.cjs); other folders come here, so a store can change its
// statements, split or merge without its callers noticing.
export { findPromptVersion, listPromptVersions, listPrompts } from './store/prompts.js';
