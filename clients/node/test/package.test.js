'use strict';
// The npm package: `npm pack` builds it with its LICENSE, the generated files and every
// file lib/ needs; installed from the tarball into an empty project, it loads through
// require and import alike.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const CLIENT = path.join(__dirname, '..');
const run = (cmd, args, cwd) => {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8' });
  assert.equal(r.status, 0, `${cmd} ${args.join(' ')}:\n${r.stdout}${r.stderr}`);
  return r.stdout;
};

test('npm pack: LICENSE, the generated files, everything lib/ requires; installs and loads', { skip: spawnSync('npm', ['--version']).status !== 0 && 'npm is missing' }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rl-node-pack-'));
  try {
    const [packed] = JSON.parse(run('npm', ['pack', '--json', '--pack-destination', dir], CLIENT));
    const files = packed.files.map((f) => f.path).sort();
    for (const needed of ['LICENSE', 'README.md', 'package.json', 'index.js', 'index.mjs', 'index.d.ts', 'index.d.mts', 'commands.generated.d.ts', 'lib/commands.generated.js']) {
      assert.ok(files.includes(needed), `${needed} is not in the package: ${files.join(', ')}`);
    }
    assert.equal(fs.readFileSync(path.join(CLIENT, 'LICENSE'), 'utf8'), fs.readFileSync(path.join(CLIENT, '..', '..', 'LICENSE'), 'utf8'));
    // Every relative require in the package resolves inside it.
    for (const f of files.filter((x) => x.endsWith('.js'))) {
      for (const [, rel] of fs.readFileSync(path.join(CLIENT, f), 'utf8').matchAll(/require\('(\.[^']+)'\)/g)) {
        const target = path.posix.join(path.posix.dirname(f), rel);
        assert.ok(files.includes(target) || files.includes(`${target}.js`), `${f} requires ${rel}, not in the package`);
      }
    }
    const app = path.join(dir, 'app');
    fs.mkdirSync(app);
    fs.writeFileSync(path.join(app, 'package.json'), '{"name":"app","version":"1.0.0","private":true}');
    run('npm', ['install', '--no-audit', '--no-fund', '--offline', '--loglevel=error', path.join(dir, packed.filename)], app);
    const cjs = run(process.execPath, ['-e', "const rl = require('@rl/client'); console.log(typeof rl.createLimiter, typeof rl.policies.gcra, rl.VERSION)"], app);
    assert.equal(cjs.trim(), `function function ${packed.version}`);
    const esm = run(process.execPath, ['--input-type=module', '-e', "import rl, { createLimiter, RLArgumentError } from '@rl/client'; console.log(typeof createLimiter, rl.RLArgumentError === RLArgumentError)"], app);
    assert.equal(esm.trim(), 'function true');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
