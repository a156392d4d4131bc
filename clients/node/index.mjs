// ES module entry: the CommonJS module (index.js), its exports by name and as the default.
export * from './index.js';
export { default } from './index.js';
