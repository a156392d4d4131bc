'use strict';
// examples/node/express-rl.js as a user runs it (imports 'express', 'ioredis' and
// '@rl/client' from its own node_modules), against both servers: 200s with the headers,
// then a 429 with Retry-After.
const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const { randomUUID } = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { ROOT, BACKENDS, SKIP_SERVERS, freePort, until } = require('./helpers');

const EXAMPLE = path.join(ROOT, 'examples', 'node', 'express-rl.js');
const MODULES = path.join(__dirname, '..', 'node_modules');

// A directory where the example finds its three packages, as after npm install.
function appDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rl-express-'));
  fs.mkdirSync(path.join(dir, 'node_modules', '@rl'), { recursive: true });
  fs.symlinkSync(path.join(MODULES, 'express'), path.join(dir, 'node_modules', 'express'));
  fs.symlinkSync(path.join(MODULES, 'ioredis'), path.join(dir, 'node_modules', 'ioredis'));
  fs.symlinkSync(path.join(__dirname, '..'), path.join(dir, 'node_modules', '@rl', 'client'));
  fs.copyFileSync(EXAMPLE, path.join(dir, 'express-rl.mjs'));
  return dir;
}

describe('examples/node/express-rl.js', { skip: SKIP_SERVERS || (!fs.existsSync(path.join(MODULES, 'express')) && 'express is not installed: npm install in clients/node') }, () => {
  for (const { backend, url } of BACKENDS) {
    test(`a burst of 5, then 429 with the headers (${backend})`, async () => {
      const dir = appDir();
      const port = await freePort();
      const proc = spawn(process.execPath, [path.join(dir, 'express-rl.mjs')], {
        cwd: dir,
        env: { ...process.env, PORT: String(port), REDIS_URL: url, RL_PERIOD: '1h' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      proc.stdout.on('data', (d) => (out += d));
      proc.stderr.on('data', (d) => (out += d));
      try {
        await until('the example to listen', 10000, () => {
          if (proc.exitCode !== null) throw new Error(`exited: ${out}`);
          return out.includes('listening on');
        });
        const user = randomUUID();
        const get = () => fetch(`http://127.0.0.1:${port}/`, { headers: { 'X-User': user } });
        for (let i = 0; i < 5; i++) {
          const r = await get();
          assert.equal(r.status, 200, out);
          // A bucket's w: the time it takes to refill from empty (5 tokens at 1 per hour).
          assert.equal(r.headers.get('ratelimit-policy'), '"default";q=5;w=18000');
          assert.equal(r.headers.get('x-ratelimit-remaining'), String(4 - i));
          assert.equal(r.headers.get('retry-after'), null);
          await r.text();
        }
        const no = await get();
        assert.equal(no.status, 429);
        const retry = Number(no.headers.get('retry-after'));
        assert.ok(retry > 3500 && retry <= 3600, `Retry-After ${retry}`);
        assert.match(no.headers.get('ratelimit'), /^"default";r=0;t=\d+$/);
        assert.equal(no.headers.get('x-ratelimit-limit'), '5');
      } finally {
        proc.kill('SIGTERM');
        await until('the example to stop', 10000, () => proc.exitCode !== null || proc.signalCode !== null);
        fs.rmSync(dir, { recursive: true, force: true });
      }
    });
  }
});
