'use strict';
// The shipped type declarations, checked by the TypeScript compiler against real
// node-redis and ioredis types (test/types-usage.ts, test/types-usage-esm.mts).
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const dir = path.join(__dirname, '..');
const tsc = path.join(dir, 'node_modules', 'typescript', 'bin', 'tsc');

test('index.d.ts and index.d.mts type-check a typed usage (tsc --noEmit)', { skip: !fs.existsSync(tsc) && 'typescript is not installed: npm install in clients/node' }, () => {
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(__dirname, 'tsconfig.json')], { cwd: dir, encoding: 'utf8' });
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`);
});
