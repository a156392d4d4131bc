'use strict';
// fastifyStore under @fastify/rate-limit (the version package.json pins), over HTTP,
// against both servers: the limit, x-ratelimit-reset and retry-after from RL's exact
// window end, a route's own keys (child()), and the options a fixed window cannot have.
const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { BACKENDS, SKIP_SERVERS, CLIENTS, raw, unique } = require('./helpers');
const { serverMs, startOfWindow, resetSpan } = require('./stores');
const { fastifyStore, RLArgumentError } = require('..');

const HOUR = 3600000;
const major = Number(process.versions.node.split('.')[0]);
const INSTALLED = fs.existsSync(path.join(__dirname, '..', 'node_modules', '@fastify', 'rate-limit'));
const SKIP =
  SKIP_SERVERS ||
  (major < 20 && 'fastify 5 needs Node.js 20 or newer') ||
  (!INSTALLED && '@fastify/rate-limit is not installed: npm ci in clients/node');

/** A fastify app: GET /a and /b, max 2 per hour per X-User, on `store`. */
async function appWith(store, options = {}) {
  const app = require('fastify')();
  await app.register(require('@fastify/rate-limit'), {
    max: 2,
    timeWindow: HOUR,
    keyGenerator: (req) => req.headers['x-user'],
    store,
    ...options,
  });
  app.get('/a', async () => 'a');
  app.get('/b', { config: { rateLimit: { max: 1 } } }, async () => 'b');
  await app.listen({ port: 0, host: '127.0.0.1' });
  return app;
}

describe('fastifyStore under @fastify/rate-limit, over HTTP', { skip: SKIP }, () => {
  for (const { backend, url } of BACKENDS) {
    test(`max 2: 200, 200, then 429 with the window's end (${backend})`, async () => {
      const { client, close } = await CLIENTS[1].open(url);
      const Store = fastifyStore(client, { timeout: 2000, prefix: 'rltest:fastify:' });
      const app = await appWith(Store);
      try {
        const base = `http://127.0.0.1:${app.server.address().port}`;
        const user = unique('fastify');
        const end = await startOfWindow(client, HOUR, 0.99);
        for (let i = 1; i <= 3; i++) {
          const t0 = await serverMs(client);
          const r = await fetch(`${base}/a`, { headers: { 'X-User': user } });
          const { min, max } = resetSpan(end, t0, await serverMs(client));
          await r.text();
          assert.equal(r.status, i <= 2 ? 200 : 429, `request ${i}`);
          assert.equal(r.headers.get('x-ratelimit-limit'), '2');
          assert.equal(r.headers.get('x-ratelimit-remaining'), String(Math.max(2 - i, 0)));
          const reset = Number(r.headers.get('x-ratelimit-reset'));
          assert.ok(reset >= min && reset <= max, `x-ratelimit-reset ${reset}, want ${min}..${max}`);
          if (i === 3) assert.equal(Number(r.headers.get('retry-after')), reset);
        }
        // Every hit counted, the 429 too. /b, with a max of its own, has its own keys (child()).
        const b = [];
        for (let i = 0; i < 2; i++) b.push((await fetch(`${base}/b`, { headers: { 'X-User': user } })).status);
        assert.deepEqual(b, [200, 429]);
        const keys = (await raw(client, 'KEYS', `rltest:fastify:*${user}`)).map(String).sort();
        assert.deepEqual(keys, [`rltest:fastify:${user}`, `rltest:fastify:GET/b-${user}`].sort());
        assert.equal(String(await raw(client, 'GET', `rltest:fastify:${user}`)), '3');
        assert.equal(String(await raw(client, 'GET', `rltest:fastify:GET/b-${user}`)), '2');
        // read() ({ increment: false }): the same numbers, nothing counted.
        const read = (key) => new Promise((resolve, reject) => new Store().read(key, (err, res) => (err ? reject(err) : resolve(res)), HOUR, 2));
        const seen = await read(user);
        assert.equal(seen.current, 3);
        assert.ok(Math.abs(seen.ttl - (end - (await serverMs(client)))) < 1000, `ttl ${seen.ttl}`);
        assert.deepEqual(await read(unique('idle')), { current: 0, ttl: 0 });
        assert.equal(String(await raw(client, 'GET', `rltest:fastify:${user}`)), '3');
      } finally {
        await app.close();
        await close();
      }
    });
  }

  test('continueExceeding and exponentialBackoff are refused', async () => {
    const Store = fastifyStore({ call: async () => null, batch: async () => ({ replies: [], errors: null }) }); // an adapter: nothing is sent
    assert.throws(() => new Store({ continueExceeding: true }), RLArgumentError);
    assert.throws(() => new Store({ exponentialBackoff: true }), RLArgumentError);
  });
});
