'use strict';
// Against a redis-server this test starts itself: RLNotLoadedError while it has neither the
// module nor the library, detection after FUNCTION LOAD, and OOM at maxmemory.
const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { ROOT, CLIENTS, raw, haveRedisServer, startServer } = require('./helpers');
const { createLimiter, RLNotLoadedError, RLOutOfMemoryError, RLArgumentError } = require('..');

const LIBRARY = process.env.RL_LIBRARY || path.join(ROOT, 'functions', 'rl.lua');
const skip = !haveRedisServer()
  ? 'redis-server is not installed (set REDIS_SERVER to one)'
  : !fs.existsSync(LIBRARY) && `${LIBRARY} is missing (set RL_LIBRARY)`;

describe('a server of our own', { skip }, () => {
  let server;
  before(async () => {
    server = await startServer();
  });
  after(async () => {
    if (server) await server.stop();
  });

  for (const kind of CLIENTS) {
    test(`${kind.name}: not loaded, then the library once loaded, then OOM`, async () => {
      const { client, close } = await kind.open(server.url);
      try {
        await raw(client, 'FUNCTION', 'FLUSH');
        await raw(client, 'CONFIG', 'SET', 'maxmemory', '0');
        const rl = createLimiter(client);
        await assert.rejects(rl.gcra('k', 5, 1, '1s'), (e) => {
          assert.ok(e instanceof RLNotLoadedError, e.name);
          assert.match(e.message, /--loadmodule/);
          assert.match(e.message, /FUNCTION LOAD/);
          return true;
        });
        await assert.rejects(rl.backend(), RLNotLoadedError);
        assert.equal(Number(await raw(client, 'DBSIZE')), 0);

        await raw(client, 'FUNCTION', 'LOAD', fs.readFileSync(LIBRARY, 'utf8'));
        // A failed detection is not cached: the same limiter finds the library now.
        assert.equal(await rl.backend(), 'library');
        assert.equal((await rl.gcra('k', 5, 1, '1s')).remaining, 4);
        await assert.rejects(rl.gcra('k', 0, 1, '1s'), RLArgumentError);

        await raw(client, 'CONFIG', 'SET', 'maxmemory', '1');
        try {
          await assert.rejects(rl.gcra('k2', 5, 1, '1s'), (e) => e instanceof RLOutOfMemoryError && e.code === 'OOM');
          // A release still works at maxmemory (it frees memory, like DEL).
          assert.equal(await rl.release('k3', 'nobody'), false);
        } finally {
          await raw(client, 'CONFIG', 'SET', 'maxmemory', '0');
        }
        assert.equal(Number(await raw(client, 'EXISTS', 'k2')), 0);
        await raw(client, 'FLUSHALL');
      } finally {
        await close();
      }
    });
  }
});
