// What other folders may use of document chunks (the knowledge index keeps their vectors). Only
// this folder imports its store/ (no-foreign-store in .dependency-cruiser.cjs); other folders come
// here, so a store can change its statements, split or merge without its callers noticing.
export { selectChunksWithoutVector, updateChunkVectors } from './store/document-chunks.js';
