'use strict';
// scripts/clientgen/node.py: the files in the tree are what it writes from commands.json,
// and a command added to the table (a made-up RL.MADEUP with text, integer and duration
// options, a flag, no window, and an RL.ALL policy with a flag before its word) appears in the client by generation alone:
// its method, its pipeline method, its policy, its checks and its types.
const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ROOT, TABLE } = require('./helpers');

const CLIENT = path.join(__dirname, '..');
const tsc = path.join(CLIENT, 'node_modules', 'typescript', 'bin', 'tsc');

const python = (code, ...args) => spawnSync('python3', ['-c', code, ...args], { cwd: ROOT, encoding: 'utf8' });
const skip = python('import sys; sys.exit(sys.version_info < (3, 9))').status !== 0 && 'python3 (3.9 or newer) is needed to run the generator';

// A made-up flag (a value-less option, as SHADOW is): on the command, and before its policy's word.
const LOUD = { name: 'LOUD', type: 'flag', summary: 'a flag made up for this test' };

// Writes what the generator emits for `commandsJson` under `dir` (as if it were clients/node).
const EMIT = `
import json, sys
from pathlib import Path
sys.path.insert(0, "scripts")
from clientgen import model, node
source, out = Path(sys.argv[1]), Path(sys.argv[2])
for rel, text in node.emit(model.load(source), json.loads(source.read_text())).items():
    target = out / Path(rel).relative_to("clients/node")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)
`;

const COST = TABLE.commands.find((c) => c.name === 'RL.FIXED').options.find((o) => o.name === 'COST');
const MADEUP = {
  name: 'RL.MADEUP',
  summary: 'A command made up for this test',
  function: 'rl_madeup',
  policy: 'MADEUP',
  keys: 'first',
  arguments: [
    { name: 'key', type: 'key' },
    { name: 'limit', type: 'integer', min: 1, max: 1000000 },
  ],
  options: [
    COST,
    { name: 'EVERY', type: 'text', min_bytes: 1, max_bytes: 8 },
    { name: 'ON', type: 'integer', min: 1, max: 31 },
    { name: 'AT', type: 'text', min_bytes: 5, max_bytes: 5 },
    { name: 'TZ', type: 'text', min_bytes: 1, max_bytes: 64 },
    { name: 'GRACE', type: 'duration', min_ms: 0, max_ms: 86400000 },
    LOUD,
  ],
  reply: 'decision',
};

describe('the generator (scripts/clientgen/node.py)', { skip }, () => {
  test('the generated files are up to date with commands.json (make clients)', () => {
    const r = spawnSync('python3', ['scripts/clientgen', '--check', 'node'], { cwd: ROOT, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
  });

  describe('a command added to the table', () => {
    let dir;
    let rl;
    before(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rl-node-gen-'));
      for (const f of ['index.js', 'index.d.ts', 'package.json']) fs.copyFileSync(path.join(CLIENT, f), path.join(dir, f));
      fs.cpSync(path.join(CLIENT, 'lib'), path.join(dir, 'lib'), { recursive: true });
      fs.symlinkSync(path.join(CLIENT, 'node_modules'), path.join(dir, 'node_modules'));
      const spec = JSON.parse(JSON.stringify(TABLE));
      spec.commands.push(MADEUP);
      spec.policies.push({ word: 'MADEUP', command: 'RL.MADEUP', arguments: [MADEUP.arguments[1]], options: [MADEUP.options[4]], before: [LOUD], looked_at: false });
      fs.writeFileSync(path.join(dir, 'commands.json'), JSON.stringify(spec));
      const r = python(EMIT, path.join(dir, 'commands.json'), dir);
      assert.equal(r.status, 0, r.stderr);
      rl = require(path.join(dir, 'index.js'));
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    const recorder = () => {
      const sent = [];
      const adapter = {
        sent,
        call: async (args) => (sent.push(args), args[0] === 'RL.ALL' ? [[1, 7, 6, 0, 1000], [1, 7, 6, 0, 1000]] : [1, 7, 6, 0, 1000]),
        batch: async (commands) => (sent.push(...commands), { replies: commands.map(() => [[1, 7, 6, 0, 1000], [1, 7, 6, 0, 1000]]), errors: null }),
      };
      return adapter;
    };

    test('its method and pipeline method send it, with every kind of option, to the module and the library', async () => {
      for (const backend of ['module', 'library']) {
        const adapter = recorder();
        const limiter = rl.createLimiter(adapter, { backend });
        const d = await limiter.madeup('k', 7, { cost: 2, every: 'month', on: 1, at: '09:00', tz: 'Europe/Berlin', grace: '90s', loud: true });
        const head = backend === 'module' ? ['RL.MADEUP'] : ['FCALL', 'rl_madeup', '1'];
        const tail = ['k', '7', 'COST', '2', 'EVERY', 'month', 'ON', '1', 'AT', '09:00', 'TZ', 'Europe/Berlin', 'GRACE', '90s', 'LOUD'];
        assert.deepEqual(adapter.sent.pop(), [...head, ...tail]);
        // Its window rule is "none": no w.
        assert.equal(d.headers()['RateLimit-Policy'], '"default";q=7');
        await limiter.pipeline().madeup('k', 7, { loud: false }).exec();
        assert.deepEqual(adapter.sent.pop(), [...head, 'k', '7']);
      }
    });

    test('its checks come from the table', async () => {
      const adapter = recorder();
      const limiter = rl.createLimiter(adapter, { backend: 'module' });
      for (const [options, message] of [
        [{ tz: '' }, /tz must be a string or Buffer of 1 to 64 bytes/],
        [{ tz: 5 }, /tz must be a string/],
        [{ on: 32 }, /on must be an integer from 1 to 31/],
        [{ at: '9:00' }, /at must be a string or Buffer of 5 to 5 bytes/],
        [{ grace: '2d' }, /grace must be a duration from 0 ms to 86400000 ms/],
        [{ every: 'fortnight' }, /every/],
        [{ loud: 'yes' }, /loud must be true or false/],
        [{ delay: 1 }, /unknown option 'delay': RL.MADEUP takes cost, every, on, at, tz, grace, loud/],
      ]) {
        await assert.rejects(limiter.madeup('k', 7, options), (e) => e instanceof rl.RLArgumentError && message.test(e.message));
      }
      await assert.rejects(limiter.madeup('k', 1000001), rl.RLArgumentError);
      assert.deepEqual(adapter.sent, []);
    });

    test('its RL.ALL policy, with its own option and its flag before its word; a fail mode reports its limit', async () => {
      const adapter = recorder();
      const limiter = rl.createLimiter(adapter, { backend: 'module' });
      const d = await limiter.all([['{u}:q', rl.policies.madeup(7, { tz: 'UTC' })]]);
      assert.deepEqual(adapter.sent.pop(), ['RL.ALL', '1', '{u}:q', 'MADEUP', '7', 'TZ', 'UTC']);
      await limiter.all([['{u}:q', rl.policies.madeup(7, { tz: 'UTC', loud: true })]]);
      assert.deepEqual(adapter.sent.pop(), ['RL.ALL', '1', '{u}:q', 'LOUD', 'MADEUP', '7', 'TZ', 'UTC']);
      assert.throws(() => rl.policies.madeup(7, { loud: 1 }), rl.RLArgumentError);
      assert.equal(d.headers()['RateLimit-Policy'], '"madeup";q=7');
      const dead = rl.createLimiter({ call: () => Promise.reject(new Error('down')), batch: () => Promise.reject(new Error('down')) }, { onConnectionError: 'allow' });
      assert.equal((await dead.madeup('k', 7)).remaining, 7);
    });

    test('its types (tsc)', { skip: !fs.existsSync(tsc) && 'typescript is not installed' }, () => {
      fs.writeFileSync(
        path.join(dir, 'usage.ts'),
        [
          "import { createLimiter, policies, MadeupOptions } from './index';",
          'export async function f(client: { sendCommand(...args: any[]): Promise<any> }): Promise<void> {',
          '  const rl = createLimiter(client);',
          "  const o: MadeupOptions = { tz: 'Europe/Berlin', on: 1, grace: '1s', every: 'month', at: '09:00', loud: true };",
          "  await rl.madeup('k', 7, o);",
          "  await rl.pipeline().madeup('k', 7).exec();",
          "  policies.madeup(7, { tz: 'UTC', loud: false });",
          '  // @ts-expect-error a flag is a boolean',
          "  await rl.madeup('k', 7, { loud: 'yes' });",
          '  // @ts-expect-error TZ is a text',
          "  await rl.madeup('k', 7, { tz: 5 });",
          '}',
        ].join('\n'),
      );
      const r = spawnSync(process.execPath, [tsc, '--noEmit', '--strict', '--types', 'node', '--skipLibCheck', '--module', 'node16', '--moduleResolution', 'node16', path.join(dir, 'usage.ts')], {
        cwd: dir,
        encoding: 'utf8',
      });
      assert.equal(r.status, 0, r.stdout + r.stderr);
    });
  });
});
