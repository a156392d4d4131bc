'use strict';
// The deadline and the fail modes against real servers of our own, through node-redis and
// ioredis: a stopped server (nothing listening), a killed one, and one under CLIENT PAUSE.
// Each call returns within its deadline plus a small margin, with the decision the fail
// mode gives. And re-detection: a server restarted with the library instead of the module.
const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { ROOT, CLIENTS, raw, freePort, until, haveRedisServer, startServer } = require('./helpers');
const { createLimiter, RLConnectionError } = require('..');

const LIBRARY = process.env.RL_LIBRARY || path.join(ROOT, 'functions', 'rl.lua');
const MODULE = process.env.RL_MODULE || path.join(ROOT, 'target', 'release', 'librl.so');
const TIMEOUT = 100;
// The margin a loaded test machine needs beyond the deadline.
const MARGIN = Number(process.env.RL_TEST_DEADLINE_MARGIN_MS || 150);
const skip = !haveRedisServer() ? 'redis-server is not installed (set REDIS_SERVER to one)' : !fs.existsSync(LIBRARY) && `${LIBRARY} is missing`;

// A client of `url` that is still trying to connect when the test starts using it. `strict`:
// configured as the README asks for a call the deadline gave up on never to be sent later
// (no offline queue).
function connecting(kind, url, strict = false) {
  if (kind === 'node-redis') {
    const { createClient } = require('redis');
    const client = createClient({ url, disableOfflineQueue: strict });
    client.on('error', () => {});
    client.connect().catch(() => {});
    return { client, close: () => client.destroy() };
  }
  const { Redis } = require('ioredis');
  const client = new Redis(url, { enableOfflineQueue: !strict });
  client.on('error', () => {});
  return { client, close: () => client.disconnect() };
}

// The three fail modes on `client`: each call within the deadline, each decision as the rules give.
async function checkFailModes(client) {
  const timed = async (call) => {
    const t0 = process.hrtime.bigint();
    const result = await call();
    const took = Number(process.hrtime.bigint() - t0) / 1e6;
    assert.ok(took < TIMEOUT + MARGIN, `took ${took.toFixed(0)} ms (deadline ${TIMEOUT} ms)`);
    return result;
  };
  const options = { backend: 'library', timeout: TIMEOUT };
  await timed(() => assert.rejects(createLimiter(client, options).gcra('k', 5, 1, '1s'), RLConnectionError));
  const open = await timed(() => createLimiter(client, { ...options, onConnectionError: 'allow' }).gcra('k', 5, 1, '1s'));
  assert.deepEqual([open.allowed, open.remaining, open.retryAfter, open.resetAfter], [true, 5, 0, 0]);
  assert.ok(open.error instanceof RLConnectionError);
  const closed = await timed(() => createLimiter(client, { ...options, onConnectionError: 'deny' }).gcra('k', 5, 1, '1s'));
  assert.deepEqual([closed.allowed, closed.remaining, closed.retryAfter, closed.resetAfter], [false, 0, 1000, 1000]);
  assert.equal(closed.headers()['Retry-After'], '1');
  const [slot] = await timed(() => createLimiter(client, { ...options, onConnectionError: 'deny' }).pipeline().gcra('k', 5, 1, '1s').exec());
  assert.equal(slot.allowed, false);
  // Auto-detection within the deadline too.
  await timed(() => assert.rejects(createLimiter(client, { timeout: TIMEOUT }).gcra('k', 5, 1, '1s'), RLConnectionError));
}

describe('the deadline and the fail modes on real servers', { skip }, () => {
  for (const { name } of CLIENTS) {
    test(`${name}: a stopped server (nothing listening)`, async () => {
      const { client, close } = connecting(name, `redis://127.0.0.1:${await freePort()}`);
      try {
        await checkFailModes(client);
      } finally {
        await close();
      }
    });

    for (const strict of [false, true]) {
      test(`${name}: a killed server${strict ? ', no offline queue: a call given up on is never sent later' : ''}`, async () => {
        const server = await startServer();
        const { client, close } = connecting(name, server.url, strict);
        try {
          await until('the client to connect', 10000, async () => String(await raw(client, 'PING')) === 'PONG');
          await raw(client, 'FUNCTION', 'LOAD', fs.readFileSync(LIBRARY, 'utf8'));
          await server.kill();
          await checkFailModes(client);
          if (!strict) return;
          // The same port again: the client reconnects; no FCALL of the calls given up on arrives.
          const again = await startServer([], server.port);
          try {
            await until('the client to reconnect', 10000, async () => String(await raw(client, 'PING')) === 'PONG');
            await new Promise((r) => setTimeout(r, 200));
            assert.doesNotMatch(String(await raw(client, 'INFO', 'commandstats')), /cmdstat_fcall/);
          } finally {
            await again.stop();
          }
        } finally {
          await close();
        }
      });
    }

    test(`${name}: CLIENT PAUSE: the deadline holds while the server does not answer`, async () => {
      const server = await startServer();
      const { client, close } = connecting(name, server.url);
      try {
        await raw(client, 'FUNCTION', 'LOAD', fs.readFileSync(LIBRARY, 'utf8'));
        assert.equal((await createLimiter(client, { timeout: 1000 }).gcra('warm', 5, 1, '1s')).remaining, 4);
        await raw(client, 'CLIENT', 'PAUSE', '1500', 'WRITE');
        await checkFailModes(client);
      } finally {
        await close();
        await server.stop();
      }
    });

    test(`${name}: the server restarted with only the library: detected again, the call answered`, { skip: !fs.existsSync(MODULE) && `${MODULE} is missing (set RL_MODULE)` }, async () => {
      const server = await startServer(['--loadmodule', MODULE]);
      const { client, close } = connecting(name, server.url);
      try {
        const rl = createLimiter(client, { timeout: 2000 });
        assert.equal((await rl.gcra('k', 5, 1, '1h')).remaining, 4);
        assert.equal(await rl.backend(), 'module');
        await server.stop();
        const again = await startServer([], server.port);
        try {
          await until('the client to reconnect', 10000, async () => String(await raw(client, 'PING')) === 'PONG');
          await raw(client, 'FUNCTION', 'LOAD', fs.readFileSync(LIBRARY, 'utf8'));
          const d = await rl.gcra('k', 5, 1, '1h');
          assert.equal(d.remaining, 4); // counted once, on the library
          assert.equal(await rl.backend(), 'library');
        } finally {
          await again.stop();
        }
      } finally {
        await close();
      }
    });
  }
});
