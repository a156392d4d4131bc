// Types of the ES module entry (index.mjs): those of index.js.
export * from './index.js';
import * as rl from './index.js';
export default rl;
