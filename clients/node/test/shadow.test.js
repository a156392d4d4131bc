'use strict';
// SHADOW ({ shadow: true }): a limit tried beside the enforced ones. Without a server: the
// decisions' shadow flags, their HTTP fields, the fail modes, and that a shadow call
// never touches the blocked-key cache or the fallback limiter. Against the harness's
// servers: every clients/headers.json "shadow" case, through node-redis and ioredis. On
// servers of our own (their counters are this file's alone): INFO rl's shadow counters,
// and with the cache on, every shadow call reaching the server.
const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { ROOT, BACKENDS, SKIP_SERVERS, CLIENTS, HEADERS, raw, unique, callFor, checkCase, mockAdapter, deadAdapter, haveRedisServer, startServer } =
  require('./helpers');
const { createLimiter, policies, RLConnectionError } = require('..');

const MODULE = process.env.RL_MODULE || path.join(ROOT, 'target', 'release', 'librl.so');
const LIBRARY = process.env.RL_LIBRARY || path.join(ROOT, 'functions', 'rl.lua');
const REJECTED = [0, 1, 0, 60000, 60000];

describe('shadow decisions without a server', () => {
  test('a shadow call is flagged and gives no HTTP fields; its numbers are the reply', async () => {
    const limiter = createLimiter(mockAdapter(() => REJECTED), { backend: 'module' });
    const d = await limiter.fixed('k', 1, '1m', { shadow: true, cost: 1 });
    assert.deepEqual([d.shadow, d.allowed, d.retryAfter, d.resetAfter], [true, false, 60000, 60000]);
    assert.deepEqual(d.headers(), {});
    assert.equal(d.toJSON().shadow, true);
    const enforced = await limiter.fixed('k', 1, '1m', { shadow: false });
    assert.equal(enforced.shadow, false);
    assert.equal(enforced.headers()['Retry-After'], '60');
    const [slot] = await limiter.pipeline().fixed('k', 1, '1m', { shadow: true }).exec();
    assert.deepEqual([slot.shadow, slot.headers()], [true, {}]);
  });

  test('RL.ALL: members flagged, fields of the enforced members only, named by their place among all', async () => {
    const limiter = createLimiter(mockAdapter(() => [[1, 50, 48, 0, 2000], REJECTED, [1, 50, 48, 0, 2000]]), { backend: 'module' });
    const d = await limiter.all([
      ['{u}:a', policies.gcra(1, 1, '1m', { shadow: true })],
      ['{u}:b', policies.gcra(50, 1, '1s')],
    ]);
    assert.deepEqual([d.shadow, d.decisions[0].shadow, d.decisions[1].shadow], [false, true, false]);
    assert.equal(d.headers()['RateLimit-Policy'], '"gcra-2";q=50;w=50');
    assert.equal(d.headers(['new', 'burst'])['RateLimit'], '"burst";r=48;t=2');
    assert.deepEqual(d.toJSON().decisions.map((m) => m.shadow), [true, false]);
  });

  test('a shadow call goes to the server whatever the cache holds, and leaves the cache as it was', async () => {
    const adapter = mockAdapter(() => REJECTED);
    const limiter = createLimiter(adapter, { backend: 'module', cacheSize: 10, cacheMax: 60000 });
    for (let i = 0; i < 5; i++) assert.equal((await limiter.gcra('s', 1, 1, '1m', { shadow: true })).cached, false);
    assert.equal(adapter.sent.length, 5, 'every shadow call reached the server');
    // An enforced call after them is the server's (shadow rejections were not cached) ...
    assert.equal((await limiter.gcra('s', 1, 1, '1m')).cached, false);
    assert.equal(adapter.sent.length, 6);
    // ... and its rejection, cached, answers the next enforced call but no shadow one.
    assert.equal((await limiter.gcra('s', 1, 1, '1m')).cached, true);
    const shadow = await limiter.gcra('s', 1, 1, '1m', { shadow: true });
    assert.deepEqual([shadow.cached, shadow.shadow, adapter.sent.length], [false, true, 7]);
    assert.equal((await limiter.gcra('s', 1, 1, '1m')).cached, true);
  });

  test('no server: the fail mode answers a shadow call (flagged), never the fallback limiter', async () => {
    const limiter = createLimiter(deadAdapter(0), { backend: 'module', fallbackInstances: 1, onConnectionError: 'deny', timeout: 20 });
    const d = await limiter.gcra('f', 100, 100, '1s', { shadow: true });
    assert.deepEqual([d.shadow, d.allowed, d.remaining, d.retryAfter], [true, false, 0, 1000]);
    assert.ok(d.error instanceof RLConnectionError);
    // The fallback decides the enforced call (it allows at 100 / 1 per second).
    assert.equal((await limiter.gcra('f', 100, 100, '1s')).allowed, true);
    const raising = createLimiter(deadAdapter(0), { backend: 'module', fallbackInstances: 1, timeout: 20 });
    await assert.rejects(raising.gcra('f', 100, 100, '1s', { shadow: true }), RLConnectionError);
  });

  test('no server: an RL.ALL of shadow policies only is allowed, as the server would', async () => {
    const limiter = createLimiter(deadAdapter(0), { backend: 'module', onConnectionError: 'deny', timeout: 20 });
    const d = await limiter.all([['{u}:a', policies.fixed(3, '1m', { shadow: true })]]);
    assert.deepEqual([d.allowed, d.shadow, d.decisions[0].allowed, d.decisions[0].shadow], [true, false, false, true]);
    assert.deepEqual(d.headers(), {});
  });
});

for (const { backend, url } of BACKENDS) {
  for (const kind of CLIENTS) {
    describe(`clients/headers.json "shadow" on the ${backend} via ${kind.name}`, { skip: SKIP_SERVERS }, () => {
      let conn;
      before(async () => {
        conn = await kind.open(url);
      });
      after(async () => {
        if (conn) await conn.close();
      });
      for (const [i, c] of HEADERS.shadow.entries()) {
        test(JSON.stringify(c.call), async () => {
          const rl = createLimiter(conn.client, { timeout: 2000 });
          const key = unique(`${backend}:${kind.name}:shadow-${i}`);
          let d;
          for (let n = 0; n < c.calls; n++) d = await callFor(rl, c.call, key);
          checkCase(d, c);
        });
      }
    });
  }
}

// INFO's `section` as a Map of its fields to numbers (a command's calls in commandstats).
async function info(client, section) {
  const fields = new Map();
  for (const line of String(await raw(client, 'INFO', section)).split(/\r?\n/)) {
    const m = /^([^:]+):(?:calls=)?(\d+)(?:,|$)/.exec(line);
    if (m !== null) fields.set(m[1], Number(m[2]));
  }
  return fields;
}

// How `fields` changed since `before` (fields not there count 0).
const delta = (before, after, names) => Object.fromEntries(names.map((n) => [n, (after.get(n) || 0) - (before.get(n) || 0)]));

const skipOwn = !haveRedisServer() ? 'redis-server is not installed (set REDIS_SERVER to one)' : !fs.existsSync(LIBRARY) && `${LIBRARY} is missing`;
const OWN = [
  { backend: 'module', args: ['--loadmodule', MODULE], missing: !fs.existsSync(MODULE) && `${MODULE} is missing (set RL_MODULE)`, command: 'cmdstat_RL.GCRA' },
  { backend: 'library', args: [], missing: false, command: 'cmdstat_fcall' },
];

describe('shadow calls on servers of our own', { skip: skipOwn }, () => {
  for (const own of OWN) {
    describe(own.backend, { skip: own.missing }, () => {
      let server;
      let conn;
      before(async () => {
        server = await startServer(own.args);
        conn = await CLIENTS[1].open(server.url);
        if (own.backend === 'library') await raw(conn.client, 'FUNCTION', 'LOAD', fs.readFileSync(LIBRARY, 'utf8'));
      });
      after(async () => {
        if (conn) await conn.close();
        if (server) await server.stop();
      });

      test('INFO rl counts shadow calls and policies apart from enforced ones', { skip: own.backend === 'library' && 'the library keeps no counters' }, async () => {
        const rl = createLimiter(conn.client, { timeout: 2000 });
        const names = ['rl_fixed_allowed', 'rl_fixed_rejected', 'rl_fixed_shadow_allowed', 'rl_fixed_shadow_rejected'];
        const gcra = ['rl_gcra_allowed', 'rl_gcra_rejected', 'rl_gcra_shadow_allowed', 'rl_gcra_shadow_rejected', 'rl_all_allowed'];
        const before0 = await info(conn.client, 'rl');
        const out = [];
        for (let i = 0; i < 3; i++) out.push(await rl.fixed('fixed', 1, '1h', { shadow: true }));
        assert.deepEqual(out.map((d) => [d.allowed, d.shadow]), [[true, true], [false, true], [false, true]]);
        const before1 = await info(conn.client, 'rl');
        assert.deepEqual(delta(before0, before1, names), { rl_fixed_allowed: 0, rl_fixed_rejected: 0, rl_fixed_shadow_allowed: 1, rl_fixed_shadow_rejected: 2 });
        for (let i = 0; i < 2; i++) await rl.all([['{u}:a', policies.fixed(10, '1h')], ['{u}:b', policies.gcra(1, 1, '1m', { shadow: true })]]);
        assert.deepEqual(delta(before1, await info(conn.client, 'rl'), gcra), {
          rl_gcra_allowed: 0,
          rl_gcra_rejected: 0,
          rl_gcra_shadow_allowed: 1,
          rl_gcra_shadow_rejected: 1,
          rl_all_allowed: 2,
        });
      });

      test('with the cache on, every shadow call reaches the server; an enforced one after them is the server\'s', async () => {
        const rl = createLimiter(conn.client, { timeout: 2000, cacheSize: 100, cacheMax: 60000 });
        const key = unique('cache');
        const before0 = await info(conn.client, 'commandstats');
        const counted = await info(conn.client, 'rl');
        const out = [];
        for (let i = 0; i < 50; i++) out.push(await rl.gcra(key, 1, 1, '1m', { shadow: true }));
        assert.deepEqual([out[0].allowed, out.slice(1).some((d) => d.allowed), out.some((d) => d.cached)], [true, false, false]);
        const calls = async () => (await info(conn.client, 'commandstats')).get(own.command) || 0;
        const sent = (await calls()) - (before0.get(own.command) || 0);
        assert.equal(sent, 50, 'each shadow call reached the server');
        if (own.backend === 'module') {
          assert.deepEqual(delta(counted, await info(conn.client, 'rl'), ['rl_gcra_shadow_rejected']), { rl_gcra_shadow_rejected: 49 });
        }
        // The shadow calls took the key's unit, so the server rejects: not the cache.
        const t0 = await calls();
        const enforced = await rl.gcra(key, 1, 1, '1m');
        assert.deepEqual([enforced.allowed, enforced.cached, enforced.shadow], [false, false, false]);
        assert.equal((await calls()) - t0, 1);
        // Now cached, for enforced calls only.
        assert.equal((await rl.gcra(key, 1, 1, '1m')).cached, true);
        assert.equal((await rl.gcra(key, 1, 1, '1m', { shadow: true })).cached, false);
        assert.equal((await calls()) - t0, 2);
      });
    });
  }
});
