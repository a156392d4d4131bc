'use strict';
// RLStore under express-rate-limit (the version package.json pins), over HTTP, against
// both servers: the limit, the draft-7 and draft-8 RateLimit fields from RL's exact reset,
// the window's end, decrement (skipFailedRequests, skipSuccessfulRequests), resetKey, one
// limit shared by two app instances, concurrent requests; and the store contract itself
// (increment, decrement, get, resetKey) through node-redis and ioredis.
const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { BACKENDS, SKIP_SERVERS, CLIENTS, raw, unique, freePort } = require('./helpers');
const { serve, serverMs, sleep, startOfWindow, resetSpan } = require('./stores');
const { RLStore, createLimiter, RLArgumentError, RLWrongTypeError, RLConnectionError } = require('..');

const HOUR = 3600000;
const INSTALLED = fs.existsSync(path.join(__dirname, '..', 'node_modules', 'express-rate-limit'));
const SKIP = SKIP_SERVERS || (!INSTALLED && 'express-rate-limit is not installed: npm ci in clients/node');

// A store with a deadline a loaded test machine keeps (the default is 100 ms).
const storeOf = (client, options = {}) => new RLStore(client, { timeout: 2000, ...options });

// What express-rate-limit logs (its validations, store errors): a test expects none.
function recorder() {
  const logged = [];
  return { logged, logger: { error: (e) => logged.push(e), warn: (e) => logged.push(e) } };
}

/**
 * An Express app behind express-rate-limit with `options` over `store`, keyed by the
 * X-User header: GET /ok answers 200, GET /fail 500; a 429 carries req.rateLimit.used.
 */
function appWith(store, options, logger) {
  const express = require('express');
  const { rateLimit } = require('express-rate-limit');
  const app = express();
  const limiter = rateLimit({
    store,
    keyGenerator: (req) => req.get('x-user'),
    handler: (req, res) => res.status(429).json({ used: req.rateLimit.used }),
    logger,
    ...options,
  });
  app.use(limiter);
  app.get('/ok', (req, res) => res.send('ok'));
  app.get('/fail', (req, res) => res.status(500).send('failed'));
  return { app, limiter };
}

/** GET `url` as `user`: { status, headers, body }. */
async function get(url, user) {
  const r = await fetch(url, { headers: { 'X-User': user } });
  return { status: r.status, headers: r.headers, body: await r.text() };
}

/** Waits until `store` has `hits` for `key` (a decrement runs after the response is sent). */
async function settled(store, key, hits) {
  const end = Date.now() + 5000;
  for (;;) {
    const info = await store.get(key);
    const now = info === undefined ? 0 : info.totalHits;
    if (now === hits) return;
    if (Date.now() > end) assert.fail(`${key}: ${now} hits, want ${hits}`);
    await sleep(10);
  }
}

describe('RLStore: the store contract', { skip: SKIP }, () => {
  for (const { backend, url } of BACKENDS) {
    for (const { name, open } of CLIENTS) {
      test(`increment, get, decrement, resetKey (${backend}, ${name})`, async () => {
        const { client, close } = await open(url);
        try {
          const store = storeOf(client, { prefix: 'rltest:erl:' });
          store.init({ windowMs: HOUR });
          assert.equal(store.localKeys, false);
          const key = unique('contract');
          assert.equal(await store.get(key), undefined);
          const end = await startOfWindow(client, HOUR, 0.99);
          for (let hits = 1; hits <= 3; hits++) {
            const before = Date.now();
            const { totalHits, resetTime } = await store.increment(key);
            assert.equal(totalHits, hits);
            // The window's end on the server's clock, seen from this one.
            const serverNow = await serverMs(client);
            const late = Math.abs(resetTime.getTime() - (before + (end - serverNow)));
            assert.ok(late < 1000, `resetTime ${resetTime.toISOString()} is ${late} ms off the window's end`);
          }
          // A string under the prefix, expiring at the epoch-aligned window's end.
          assert.equal(await raw(client, 'TYPE', `rltest:erl:${key}`), 'string');
          assert.equal(Number(await raw(client, 'PEXPIRETIME', `rltest:erl:${key}`)), end);
          assert.equal((await store.get(key)).totalHits, 3);
          await store.decrement(key);
          assert.equal((await store.get(key)).totalHits, 2);
          for (let i = 0; i < 4; i++) await store.decrement(key); // never below 0
          assert.equal(await store.get(key), undefined);
          assert.equal(Number(await raw(client, 'EXISTS', `rltest:erl:${key}`)), 0);
          assert.equal((await store.increment(key)).totalHits, 1);
          await store.increment(key);
          await store.resetKey(key);
          assert.equal(await store.get(key), undefined);
          assert.equal((await store.increment(key)).totalHits, 1);
        } finally {
          await close();
        }
      });
    }

    test(`every hit counts, past any limit; hits are atomic (${backend})`, async () => {
      const { client, close } = await CLIENTS[1].open(url);
      try {
        const store = storeOf(client);
        store.init({ windowMs: HOUR });
        const key = unique('atomic');
        const got = await Promise.all(Array.from({ length: 50 }, () => store.increment(key)));
        assert.deepEqual(got.map((r) => r.totalHits).sort((a, b) => a - b), Array.from({ length: 50 }, (_, i) => i + 1));
      } finally {
        await close();
      }
    });

    test(`a window RL cannot have, and a key of another type, are errors that change nothing (${backend})`, async () => {
      const { client, close } = await CLIENTS[1].open(url);
      try {
        for (const windowMs of [0, 1.5, 315360000001, undefined, '1m']) {
          const store = storeOf(client);
          // Refused at start, except what only RL.FIXED's own check knows (above 10 years).
          if (windowMs === 315360000001) store.init({ windowMs });
          else assert.throws(() => store.init({ windowMs }), RLArgumentError);
          const key = unique('bad');
          await assert.rejects(store.increment(key), RLArgumentError);
          assert.equal(Number(await raw(client, 'EXISTS', `rl:express:${key}`)), 0);
        }
        const store = storeOf(client);
        store.init({ windowMs: HOUR });
        const key = unique('list');
        await raw(client, 'RPUSH', `rl:express:${key}`, 'x');
        await assert.rejects(store.increment(key), RLWrongTypeError);
        assert.equal(Number(await raw(client, 'LLEN', `rl:express:${key}`)), 1);
        assert.throws(() => new RLStore(client, { onConnectionError: 'allow' }), RLArgumentError);
        assert.throws(() => new RLStore(client, { prefix: 7 }), RLArgumentError);
      } finally {
        await close();
      }
    });
  }

  test('a limiter with a fail mode: the store throws its error instead of counting nothing', async () => {
    const { Redis } = require('ioredis');
    const port = await freePort(); // nothing listens there
    const client = new Redis(port, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => {});
    try {
      const store = new RLStore(createLimiter(client, { backend: 'module', onConnectionError: 'allow' }));
      store.init({ windowMs: HOUR });
      await assert.rejects(store.increment('k'), RLConnectionError);
    } finally {
      client.disconnect();
    }
  });
});

describe('RLStore under express-rate-limit, over HTTP', { skip: SKIP }, () => {
  for (const { backend, url } of BACKENDS) {
    describe(backend, () => {
      let client;
      let close;
      before(async () => {
        ({ client, close } = await CLIENTS[1].open(url));
      });
      after(() => close());

      // `n` requests to /ok as a new user within one hour-long window, under
      // express-rate-limit with `options`: each response, with the reset seconds it may
      // give (resetSpan); and what express-rate-limit logged.
      async function hitsInAnHour(options, n) {
        const { logged, logger } = recorder();
        const { app } = appWith(storeOf(client), { windowMs: HOUR, ...options }, logger);
        const srv = await serve(app);
        try {
          const user = unique('hits');
          const end = await startOfWindow(client, HOUR, 0.99);
          const responses = [];
          for (let i = 0; i < n; i++) {
            const t0 = await serverMs(client);
            const r = await get(`${srv.url}/ok`, user);
            responses.push({ ...r, ...resetSpan(end, t0, await serverMs(client)) });
          }
          return { responses, logged };
        } finally {
          await srv.close();
        }
      }

      test('limit 3: three 200s, then 429s counting every hit; draft-7 fields from the window end', async () => {
        const { responses, logged } = await hitsInAnHour({ limit: 3, standardHeaders: 'draft-7', legacyHeaders: false }, 5);
        for (const [i, { status, headers, body, min, max }] of responses.entries()) {
          assert.equal(status, i < 3 ? 200 : 429, `request ${i + 1}`);
          assert.equal(headers.get('ratelimit-policy'), '3;w=3600');
          const m = /^limit=3, remaining=(\d+), reset=(\d+)$/.exec(headers.get('ratelimit'));
          assert.ok(m, headers.get('ratelimit'));
          assert.equal(Number(m[1]), Math.max(2 - i, 0));
          const reset = Number(m[2]);
          assert.ok(reset >= min && reset <= max, `reset=${reset}, want ${min}..${max}`);
          if (i >= 3) {
            assert.deepEqual(JSON.parse(body), { used: i + 1 });
            assert.equal(Number(headers.get('retry-after')), reset);
          } else {
            assert.equal(headers.get('retry-after'), null);
          }
          assert.equal(headers.get('x-ratelimit-limit'), null);
        }
        assert.deepEqual(logged, []);
      });

      test('draft-8 fields: the named policy, q, w, r and t from the window end', async () => {
        const { responses, logged } = await hitsInAnHour({ limit: 2, standardHeaders: 'draft-8', identifier: 'api' }, 3);
        for (const [i, { status, headers, min, max }] of responses.entries()) {
          assert.equal(status, i < 2 ? 200 : 429);
          assert.match(headers.get('ratelimit-policy'), /^"api"; q=2; w=3600; pk=:[A-Za-z0-9+/=]+:$/);
          const m = /^"api"; r=(\d+); t=(\d+)$/.exec(headers.get('ratelimit'));
          assert.ok(m, headers.get('ratelimit'));
          assert.equal(Number(m[1]), Math.max(1 - i, 0));
          assert.ok(Number(m[2]) >= min && Number(m[2]) <= max, `t=${m[2]}, want ${min}..${max}`);
        }
        assert.deepEqual(logged, []);
      });

      test("the window's end lets the user through again", async () => {
        const windowMs = 2000;
        const store = storeOf(client);
        const { app } = appWith(store, { windowMs, limit: 1, standardHeaders: 'draft-7' });
        const srv = await serve(app);
        try {
          const user = unique('reset');
          const end = await startOfWindow(client, windowMs, 0.5);
          assert.equal((await get(`${srv.url}/ok`, user)).status, 200);
          const no = await get(`${srv.url}/ok`, user);
          assert.equal(no.status, 429);
          assert.ok(Number(no.headers.get('retry-after')) <= 2);
          const { resetTime } = await store.get(user);
          await sleep(Math.max(resetTime.getTime() - Date.now(), 0) + 20);
          assert.ok((await serverMs(client)) >= end, 'the server is past the window end');
          assert.equal((await get(`${srv.url}/ok`, user)).status, 200);
        } finally {
          await srv.close();
        }
      });

      // Requests express-rate-limit skips are taken back (decrement) once answered; a 429
      // is a failure (status >= 400), so skipFailedRequests takes it back too.
      for (const [option, skipped, counted] of [
        ['skipFailedRequests', ['/fail', 500], ['/ok', 200]],
        ['skipSuccessfulRequests', ['/ok', 200], ['/fail', 500]],
      ]) {
        test(`${option}: skipped requests are taken back (decrement)`, async () => {
          const store = storeOf(client);
          const { app } = appWith(store, { windowMs: HOUR, limit: 2, [option]: true });
          const srv = await serve(app);
          try {
            const user = unique(option);
            for (let i = 0; i < 4; i++) {
              assert.equal((await get(`${srv.url}${skipped[0]}`, user)).status, skipped[1]);
              await settled(store, user, 0);
            }
            for (let i = 0; i < 2; i++) assert.equal((await get(`${srv.url}${counted[0]}`, user)).status, counted[1]);
            assert.equal((await get(`${srv.url}${counted[0]}`, user)).status, 429);
            await settled(store, user, option === 'skipFailedRequests' ? 2 : 3);
          } finally {
            await srv.close();
          }
        });
      }

      test("resetKey: the limiter's reset lets the user through again", async () => {
        const { app, limiter } = appWith(storeOf(client), { windowMs: HOUR, limit: 1 });
        const srv = await serve(app);
        try {
          const user = unique('resetkey');
          assert.equal((await get(`${srv.url}/ok`, user)).status, 200);
          assert.equal((await get(`${srv.url}/ok`, user)).status, 429);
          await limiter.resetKey(user);
          assert.equal(await limiter.getKey(user), undefined);
          assert.equal((await get(`${srv.url}/ok`, user)).status, 200);
          assert.equal((await limiter.getKey(user)).totalHits, 1);
        } finally {
          await srv.close();
        }
      });

      test('two app instances (node-redis and ioredis) share one limit', async () => {
        const other = await CLIENTS[0].open(url);
        const a = await serve(appWith(storeOf(client), { windowMs: HOUR, limit: 4 }).app);
        const b = await serve(appWith(storeOf(other.client), { windowMs: HOUR, limit: 4 }).app);
        try {
          const user = unique('shared');
          const statuses = [];
          for (let i = 0; i < 6; i++) statuses.push((await get(`${(i % 2 ? b : a).url}/ok`, user)).status);
          assert.deepEqual(statuses, [200, 200, 200, 200, 429, 429]);
        } finally {
          await a.close();
          await b.close();
          await other.close();
        }
      });

      test('40 requests at once, limit 10: exactly 10 pass', async () => {
        const { app } = appWith(storeOf(client), { windowMs: HOUR, limit: 10 });
        const srv = await serve(app);
        try {
          const user = unique('burst');
          const got = await Promise.all(Array.from({ length: 40 }, () => get(`${srv.url}/ok`, user)));
          assert.equal(got.filter((r) => r.status === 200).length, 10);
          assert.equal(got.filter((r) => r.status === 429).length, 30);
        } finally {
          await srv.close();
        }
      });
    });
  }

  test('a store error: 500, or the request let through with passOnStoreError', async () => {
    const { Redis } = require('ioredis');
    const port = await freePort(); // nothing listens there
    const client = new Redis(port, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on('error', () => {});
    const { logged, logger } = recorder();
    const strict = await serve(appWith(storeOf(client, { backend: 'module' }), { windowMs: HOUR, limit: 1 }, logger).app);
    const lenient = await serve(appWith(storeOf(client, { backend: 'module' }), { windowMs: HOUR, limit: 1, passOnStoreError: true }, logger).app);
    try {
      assert.equal((await get(`${strict.url}/ok`, 'u')).status, 500);
      assert.equal((await get(`${lenient.url}/ok`, 'u')).status, 200);
      assert.equal((await get(`${lenient.url}/ok`, 'u')).status, 200);
      assert.ok(logged.some((e) => e instanceof RLConnectionError), 'passOnStoreError logs the store error');
    } finally {
      await strict.close();
      await lenient.close();
      client.disconnect();
    }
  });
});
