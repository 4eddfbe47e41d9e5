// What other folders may use of platform settings. Only this folder imports its store/ (no-foreign-
// store in .dependency-cruiser.cjs); other folders come here, so a store can change its statements,
// split or merge without its callers noticing.
export { insertPlatformSettingIfAbsent, selectPlatformSetting } from './store/platform-settings.js';
