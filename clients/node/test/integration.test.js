'use strict';
// Every command and option through the typed API, against a server with the module and
// one with only the Functions library, through node-redis and through ioredis.
const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { BACKENDS, SKIP_SERVERS, CLIENTS, HEADERS, raw, unique, callFor, parseFields } = require('./helpers');
const {
  createLimiter,
  policies,
  Decision,
  AllDecision,
  ThrottleDecision,
  RLArgumentError,
  RLWrongTypeError,
  RLUnsupportedError,
  RLLeaseRejectedError,
  RLError,
} = require('..');

const TEN_YEARS = '3650d'; // windows aligned to the epoch: no boundary for years

// A rejection's wait after calls a moment apart: at most `ms`, and not much less.
function near(value, ms, slack = 10000) {
  assert.ok(typeof value === 'number' && value <= ms && value > ms - slack, `${value} is not within ${slack} ms under ${ms}`);
}

for (const { backend, url } of BACKENDS) {
  for (const kind of CLIENTS) {
    describe(`${backend} backend via ${kind.name}`, { skip: SKIP_SERVERS }, () => {
      let conn;
      let client;
      let rl;
      before(async () => {
        conn = await kind.open(url);
        client = conn.client;
        rl = createLimiter(client);
      });
      after(async () => {
        if (conn) await conn.close();
      });
      const k = (label) => unique(`${backend}:${kind.name}:${label}`);

      test('learns the backend once, and a forced one is used as is', async () => {
        assert.equal(await rl.backend(), backend);
        assert.equal(await rl.backend(), backend);
        const forced = createLimiter(client, { backend });
        assert.equal(await forced.backend(), backend);
        const d = await forced.gcra(k('forced'), 5, 1, '1s');
        assert.equal(d.remaining, 4);
        // The other backend, forced, answers that its commands are not there.
        const wrong = createLimiter(client, { backend: backend === 'module' ? 'library' : 'module' });
        await assert.rejects(wrong.gcra(k('wrong'), 5, 1, '1s'), (e) => e instanceof RLError && /not loaded/i.test(e.message));
      });

      test('fixed: limit 2 allows 1, 1 then rejects; COST 0, REFUND, DEBIT; never', async () => {
        const key = k('fixed');
        const d1 = await rl.fixed(key, 2, TEN_YEARS);
        assert.ok(d1 instanceof Decision);
        assert.deepEqual([d1.allowed, d1.limit, d1.remaining, d1.retryAfter], [true, 2, 1, 0]);
        assert.ok(d1.resetAfter > 0);
        const d2 = await rl.fixed(key, 2, TEN_YEARS);
        assert.deepEqual([d2.allowed, d2.remaining, d2.retryAfter], [true, 0, 0]);
        const d3 = await rl.fixed(key, 2, TEN_YEARS);
        assert.equal(d3.allowed, false);
        assert.equal(d3.remaining, 0);
        assert.ok(d3.retryAfter > 0 && d3.retryAfter <= d3.resetAfter + 1);
        const look = await rl.fixed(key, 2, TEN_YEARS, { cost: 0 });
        assert.deepEqual([look.allowed, look.remaining], [true, 0]);
        const refund = await rl.fixed(key, 2, TEN_YEARS, { refund: 1 });
        assert.deepEqual([refund.allowed, refund.remaining], [true, 1]);
        assert.equal(String(await raw(client, 'GET', key)), '1');
        const debit = await rl.fixed(key, 2, TEN_YEARS, { debit: 3 });
        assert.deepEqual([debit.allowed, debit.remaining, debit.retryAfter], [true, 0, 0]);
        assert.equal(String(await raw(client, 'GET', key)), '4');
        assert.equal((await rl.fixed(key, 2, TEN_YEARS)).allowed, false);
        const never = await rl.fixed(k('fixed-never'), 2, TEN_YEARS, { cost: 3 });
        assert.deepEqual([never.allowed, never.retryAfter], [false, null]);
        assert.equal(never.headers()['Retry-After'], undefined);
      });

      test('durations: a bare integer is seconds, strings as RL reads them', async () => {
        const a = await rl.fixed(k('ms'), 3, 315360000);
        assert.equal(a.window, 315360000000);
        assert.equal(a.headers()['RateLimit-Policy'], '"default";q=3;w=315360000');
        const b = await rl.sliding(k('ms'), 3, 90);
        assert.equal(b.resetAfter, 90000);
        const ms = await rl.sliding(k('ms2'), 3, '90000ms');
        assert.equal(ms.resetAfter, 90000);
        const c = await rl.sliding(k('s'), 3, '90');
        assert.equal(c.resetAfter, 90000);
        assert.equal(c.window, 90000);
        const e = await rl.sliding(k('m'), 3, '2M');
        assert.equal(e.resetAfter, 120000);
      });

      test('sliding: a full log rejects until its oldest unit leaves; REFUND; no DEBIT', async () => {
        const key = k('sliding');
        assert.equal((await rl.sliding(key, 2, 3600)).remaining, 1);
        assert.equal((await rl.sliding(key, 2, '3600000ms')).remaining, 0);
        const no = await rl.sliding(key, 2, '1h');
        assert.equal(no.allowed, false);
        near(no.retryAfter, 3600000);
        assert.equal((await rl.sliding(key, 2, '1h', { cost: 0 })).remaining, 0);
        const back = await rl.sliding(key, 2, '1h', { refund: 1 });
        assert.deepEqual([back.allowed, back.remaining], [true, 1]);
        assert.equal(Number(await raw(client, 'ZCARD', key)), 1);
        await assert.rejects(rl.sliding(key, 2, '1h', { debit: 1 }), (e) => e instanceof RLArgumentError && /unknown option 'debit': RL.SLIDING takes cost, refund/.test(e.message));
      });

      test('slidingCounter: COST n, rejection, REFUND, DEBIT into debt', async () => {
        const key = k('slidingcounter');
        const a = await rl.slidingCounter(key, 3, TEN_YEARS, { cost: 2 });
        assert.deepEqual([a.allowed, a.limit, a.remaining], [true, 3, 1]);
        const b = await rl.slidingCounter(key, 3, TEN_YEARS, { cost: 2 });
        assert.equal(b.allowed, false);
        assert.ok(b.retryAfter > 0);
        assert.equal((await rl.slidingCounter(key, 3, TEN_YEARS, { refund: 1 })).remaining, 2);
        const debt = await rl.slidingCounter(key, 3, TEN_YEARS, { debit: 5 });
        assert.deepEqual([debt.allowed, debt.remaining], [true, 0]);
        const look = await rl.slidingCounter(key, 3, TEN_YEARS, { cost: 0 });
        assert.equal(look.allowed, false); // in debt
      });

      test('bucket: capacity 2, 1 per hour; DEBIT below zero; REFUND to full deletes', async () => {
        const key = k('bucket');
        assert.equal((await rl.bucket(key, 2, 1, '1h')).remaining, 1);
        assert.equal((await rl.bucket(key, 2, 1, '1h')).remaining, 0);
        const no = await rl.bucket(key, 2, 1, '1h');
        assert.equal(no.allowed, false);
        near(no.retryAfter, 3600000);
        const debt = await rl.bucket(key, 2, 1, '1h', { debit: 2 });
        assert.deepEqual([debt.allowed, debt.remaining], [true, 0]);
        assert.match(String(await raw(client, 'HGET', key, 'tokens')), /^-/);
        const full = await rl.bucket(key, 2, 1, '1h', { refund: 100 });
        assert.deepEqual([full.allowed, full.remaining, full.resetAfter], [true, 2, 0]);
        assert.equal(Number(await raw(client, 'EXISTS', key)), 0);
      });

      test('gcra: capacity 5 per second; COST over capacity never passes; DEBIT; DELAY queues', async () => {
        const key = k('gcra');
        const never = await rl.gcra(key, 5, 1, '1s', { cost: 6 });
        assert.deepEqual([never.allowed, never.limit, never.remaining, never.retryAfter], [false, 5, 5, null]);
        const a = await rl.gcra(key, 5, 1, '1s', { cost: 2 });
        assert.deepEqual([a.allowed, a.remaining], [true, 3]);
        const debt = await rl.gcra(key, 5, 1, '1s', { debit: 6 });
        assert.deepEqual([debt.allowed, debt.remaining, debt.retryAfter], [true, 0, 0]);
        const no = await rl.gcra(key, 5, 1, '1s');
        assert.equal(no.allowed, false);
        near(no.retryAfter, 4000, 1000);
        assert.equal((await rl.gcra(key, 5, 1, '1s', { refund: 8 })).remaining, 5);

        const q = k('gcra-delay');
        const first = await rl.gcra(q, 1, 1, '1h', { delay: '2h' });
        assert.deepEqual([first.allowed, first.retryAfter], [true, 0]);
        const second = await rl.gcra(q, 1, 1, '1h', { delay: '2h' });
        assert.equal(second.allowed, true);
        near(second.retryAfter, 3600000); // act after the wait
        assert.equal(second.headers()['Retry-After'], undefined); // allowed: no Retry-After
        const third = await rl.gcra(q, 1, 1, '1h', { delay: 7200, cost: 1 });
        assert.equal(third.allowed, true);
        near(third.retryAfter, 7200000);
        const full = await rl.gcra(q, 1, 1, '1h', { delay: '2h' });
        assert.equal(full.allowed, false);
        near(full.retryAfter, 3600000);
      });

      test('throttle: CL.THROTTLE on the module, a typed error on the library', async () => {
        const key = k('throttle');
        if (backend === 'library') {
          await assert.rejects(rl.throttle(key, 0, 1, '1h'), (e) => e instanceof RLUnsupportedError && /CL.THROTTLE/.test(e.message) && /gcra/.test(e.message));
          return;
        }
        const a = await rl.throttle(key, 0, 1, '1h');
        assert.ok(a instanceof ThrottleDecision);
        assert.deepEqual([a.limited, a.allowed, a.limit, a.remaining, a.retryAfterSeconds, a.resetAfterSeconds], [false, true, 1, 0, null, 3600]);
        const b = await rl.throttle(key, 0, 1, '1h');
        assert.equal(b.limited, true);
        assert.ok(b.retryAfterSeconds >= 3590 && b.retryAfterSeconds <= 3600);
        assert.equal(b.headers()['Retry-After'], String(b.retryAfterSeconds));
        assert.equal(b.headers()['RateLimit-Policy'], '"default";q=1;w=3600');
        const qkey = k('throttle-q');
        const quantity = await rl.throttle(qkey, 4, 1, '1s', 3);
        assert.deepEqual([quantity.limited, quantity.remaining], [false, 2]);
        const look = await rl.throttle(qkey, 4, 1, '1s', 0);
        assert.equal(look.remaining, 2);
      });

      test('all: all or nothing over two keys; each key decided', async () => {
        const tag = k('all');
        const s = `{${tag}}:s`;
        const m = `{${tag}}:m`;
        const entries = [
          [s, policies.fixed(2, TEN_YEARS)],
          [m, policies.fixed(3, TEN_YEARS)],
        ];
        const a = await rl.all(entries);
        assert.ok(a instanceof AllDecision);
        assert.deepEqual([a.allowed, a.limit, a.remaining], [true, 2, 1]);
        assert.deepEqual(a.decisions.map((d) => d.remaining), [1, 2]);
        assert.deepEqual(a.keys, [s, m]);
        await rl.all(entries);
        const no = await rl.all(entries);
        assert.equal(no.allowed, false);
        assert.ok(no.retryAfter > 0);
        assert.deepEqual(no.decisions.map((d) => d.allowed), [false, true]);
        assert.equal(no.decisions[1].remaining, 1);
        assert.equal(String(await raw(client, 'GET', m)), '2'); // nothing taken from m
        const back = await rl.all(entries, { refund: 1 });
        assert.deepEqual(back.decisions.map((d) => d.remaining), [1, 2]);
        const debt = await rl.all([[s, policies.fixed(2, TEN_YEARS)], [`{${tag}}:g`, policies.gcra(5, 1, '1s')]], { debit: 5 });
        assert.equal(debt.allowed, true);
        assert.deepEqual(debt.decisions.map((d) => d.remaining), [0, 0]);
        // Object entries work too.
        const obj = await rl.all([{ key: m, policy: policies.fixed(3, TEN_YEARS) }], { cost: 0 });
        assert.equal(obj.remaining, 2);
      });

      test('all: every policy; a PENALTY policy only looked at, its block rejecting the call', async () => {
        const tag = `{${k('allp')}}`;
        const lease = `${tag}:acquire`;
        const strikes = `${tag}:penalty`;
        const entries = [
          [`${tag}:fixed`, policies.fixed(5, TEN_YEARS)],
          [`${tag}:sliding`, policies.sliding(6, '1h')],
          [`${tag}:sc`, policies.slidingCounter(7, TEN_YEARS)],
          [`${tag}:bucket`, policies.bucket(8, 1, '1s')],
          [`${tag}:gcra`, policies.gcra(9, 1, '1s', { delay: '3s' })],
          [lease, policies.acquire(10, '1m', 'job-1')],
          [strikes, policies.penalty(11, '1m', '1m', '1h')],
        ];
        const look = await rl.all(entries, { cost: 0 });
        assert.equal(look.allowed, true);
        assert.deepEqual(look.decisions.map((d) => d.limit), [5, 6, 7, 8, 9, 10, 11]);
        assert.deepEqual(look.decisions.map((d) => d.remaining), [5, 6, 7, 8, 9, 10, 11]);
        assert.equal(Number(await raw(client, 'EXISTS', lease)), 0);
        const take = await rl.all(entries, { cost: 2 });
        assert.equal(take.allowed, true);
        assert.deepEqual(take.decisions.map((d) => d.remaining), [3, 4, 5, 6, 7, 9, 11]); // ACQUIRE: one lease
        assert.notEqual(await raw(client, 'ZSCORE', lease, 'job-1'), null);
        assert.equal(Number(await raw(client, 'EXISTS', strikes)), 0); // never struck
        // The combined limit/remaining are the first rate limit's with the smallest remaining;
        // the fields have one member per policy.
        assert.deepEqual([take.limit, take.remaining], [5, 3]);
        assert.equal(
          take.headers()['RateLimit-Policy'],
          '"fixed";q=5;w=315360000, "sliding";q=6;w=3600, "slidingcounter";q=7;w=315360000, "bucket";q=8;w=8, ' +
            '"gcra";q=9;w=9, "acquire";q=10;w=60, "penalty";q=11;w=60',
        );
        // Each key's own: a bucket's w is its time to refill from empty (capacity * period / tokens).
        assert.deepEqual(take.decisions.map((d) => d.window), [315360000000, 3600000, 315360000000, 8000, 9000, 60000, 60000]);

        // A blocked offender makes the call rejected, and nothing is taken.
        const blocked = await rl.penalty(strikes, 1, '1m', '1m', '1h');
        assert.equal(blocked.allowed, false);
        const no = await rl.all([entries[0], entries[6]]);
        assert.equal(no.allowed, false);
        assert.deepEqual(no.decisions.map((d) => d.allowed), [true, false]);
        near(no.retryAfter, 60000, 5000);
        assert.equal(String(await raw(client, 'GET', `${tag}:fixed`)), '2');
        // A DELAY outside a GCRA policy is refused before anything is sent.
        await assert.rejects(rl.all(entries, { delay: '1s' }), RLArgumentError);
      });

      test('acquire and release: limit 1, a second holder waits, release frees', async () => {
        const key = k('lease');
        const a = await rl.acquire(key, 1, '1m', 'a');
        assert.deepEqual([a.allowed, a.limit, a.remaining, a.retryAfter], [true, 1, 0, 0]);
        near(a.resetAfter, 60000, 5000);
        const b = await rl.acquire(key, 1, 60, 'b');
        assert.equal(b.allowed, false);
        near(b.retryAfter, 60000, 5000);
        assert.equal(await rl.release(key, 'b'), false);
        assert.equal(await rl.release(key, 'a'), true);
        assert.equal(await rl.release(key, 'a'), false);
        assert.equal((await rl.acquire(key, 1, '1m', Buffer.from('b'))).allowed, true);
      });

      test('withLease: holds the lease while fn runs and releases it after, also on a throw', async () => {
        const key = k('with');
        const result = await rl.withLease(key, 1, '1m', 'job', async (lease) => {
          assert.equal(lease.acquired, true);
          assert.notEqual(await raw(client, 'ZSCORE', key, 'job'), null);
          assert.equal((await rl.acquire(key, 1, '1m', 'other')).allowed, false);
          return 42;
        });
        assert.equal(result, 42);
        assert.equal(Number(await raw(client, 'EXISTS', key)), 0);

        const boom = new Error('boom');
        await assert.rejects(
          rl.withLease(key, 1, '1m', 'job', async () => {
            assert.equal(Number(await raw(client, 'ZCARD', key)), 1);
            throw boom;
          }),
          (e) => e === boom,
        );
        assert.equal(Number(await raw(client, 'EXISTS', key)), 0);

        await rl.acquire(key, 1, '1m', 'holder');
        let ran = false;
        await assert.rejects(
          rl.withLease(key, 1, '1m', undefined, () => {
            ran = true;
          }),
          (e) => e instanceof RLLeaseRejectedError && e.decision.allowed === false && e.decision.retryAfter > 0,
        );
        assert.equal(ran, false);
        assert.equal(await rl.release(key, 'holder'), true);
      });

      test('lease(): released by Symbol.asyncDispose, once', { skip: typeof Symbol.asyncDispose !== 'symbol' && `Node.js ${process.version} has no Symbol.asyncDispose` }, async () => {
        const key = k('dispose');
        const lease = await rl.lease(key, 2, '1m');
        assert.equal(lease.acquired, true);
        assert.match(lease.id, /^[0-9a-f-]{36}$/);
        assert.notEqual(await raw(client, 'ZSCORE', key, lease.id), null);
        await lease[Symbol.asyncDispose]();
        assert.equal(Number(await raw(client, 'EXISTS', key)), 0);
        assert.equal(await lease.release(), false);
      });

      test('penalty: two strikes block for an hour; COST 0 looks; no REFUND', async () => {
        const key = k('penalty');
        const a = await rl.penalty(key, 2, '1h', '1h', '2h');
        assert.deepEqual([a.allowed, a.limit, a.remaining, a.retryAfter], [true, 2, 1, 0]);
        near(a.resetAfter, 3600000);
        const b = await rl.penalty(key, 2, '1h', '1h', '2h');
        assert.deepEqual([b.allowed, b.remaining], [false, 0]);
        near(b.retryAfter, 3600000);
        const look = await rl.penalty(key, 2, '1h', '1h', '2h', { cost: 0 });
        assert.equal(look.allowed, false);
        assert.equal(look.headers()['Retry-After'], String(Math.ceil(look.retryAfter / 1000)));
        await assert.rejects(rl.penalty(key, 2, '1h', '1h', '2h', { refund: 1 }), (e) => e instanceof RLArgumentError && /unknown option 'refund': RL.PENALTY takes cost, shadow$/.test(e.message));
      });

      test('share: RL.SHARE / rl_share', async (t) => {
        if (!(await rl.supports('RL.SHARE'))) {
          t.skip(`this server's RL has no ${backend === 'module' ? 'RL.SHARE' : 'rl_share'} yet`);
          return;
        }
        const key = k('share');
        const d = await rl.share(key, 'tenant-a', 1, 10, 1, '1s');
        assert.equal(d.allowed, true);
        assert.ok(d.remaining < d.limit);
        const look = await rl.share(key, 'tenant-a', 1, 10, 1, '1s', { cost: 0 });
        assert.equal(look.remaining, d.remaining);
        const all = await rl.all([[key, policies.share('tenant-a', 1, 10, 1, '1s')]], { cost: 0 });
        assert.equal(all.allowed, true);
      });

      test('quota: a calendar day in a time zone; a bad zone is the server\'s ERR; a QUOTA policy in RL.ALL', async () => {
        const key = k('quota');
        const d = await rl.quota(key, 5, 'day', { tz: 'America/New_York' });
        assert.deepEqual([d.allowed, d.limit, d.remaining], [true, 5, 4]);
        await assert.rejects(rl.quota(k('quota-zone'), 5, 'day', { tz: 'Mars/Olympus' }), (e) => e instanceof RLArgumentError && e.code === 'ERR');
        const tag = `{${k('allq')}}`;
        const a = await rl.all([
          [`${tag}:fixed`, policies.fixed(3, TEN_YEARS)],
          [`${tag}:quota`, policies.quota(5, 'day', { tz: 'America/New_York' })],
        ]);
        assert.equal(a.allowed, true);
        assert.deepEqual(a.decisions.map((x) => [x.limit, x.remaining]), [[3, 2], [5, 4]]);
      });

      test('errors: a bad argument is refused before sending and changes nothing; the server ERR; WRONGTYPE', async () => {
        const key = k('err');
        await rl.fixed(key, 5, TEN_YEARS);
        for (const call of [
          () => rl.fixed(key, 0, TEN_YEARS),
          () => rl.fixed(key, 5, '11y'),
          () => rl.fixed(key, 5, TEN_YEARS, { cost: 1, refund: 1 }),
          () => rl.acquire(key + ':l', 5, '1m', ''),
          () => rl.gcra(key, 5, 1, '1s', { delay: '1s', refund: 1 }),
        ]) {
          await assert.rejects(call(), (e) => e instanceof RLArgumentError && e.code === undefined);
        }
        assert.equal(String(await raw(client, 'GET', key)), '1');
        // The server's own ERR: a limit above its setting (rl.sliding-max-limit lowered).
        const fresh = k('err-fresh');
        await raw(client, 'SET', fresh, 'not a count');
        await assert.rejects(rl.fixed(fresh, 5, '1m'), (e) => e instanceof RLArgumentError && e.code === 'ERR');
        assert.equal(String(await raw(client, 'GET', fresh)), 'not a count');

        const list = k('list');
        await raw(client, 'RPUSH', list, 'x');
        for (const call of [
          () => rl.fixed(list, 5, '1m'),
          () => rl.gcra(list, 5, 1, '1s'),
          () => rl.bucket(list, 5, 1, '1s'),
          () => rl.acquire(list, 5, '1m', 'a'),
        ]) {
          await assert.rejects(call(), (e) => e instanceof RLWrongTypeError && e.code === 'WRONGTYPE');
        }
        assert.deepEqual((await raw(client, 'LRANGE', list, 0, -1)).map(String), ['x']);

        await assert.rejects(rl.fixed(key, 5, '1m', { cots: 1 }), RLArgumentError);
        await assert.rejects(rl.fixed(key, 5, { minutes: 1 }), RLArgumentError);
      });

      test('pipeline: typed results in order in one round trip, a failed call in its slot', async () => {
        const key = k('pipe');
        await raw(client, 'RPUSH', key + ':f', 'x');
        const p = rl
          .pipeline()
          .gcra(key, 5, 1, '1s')
          .gcra(key, 5, 1, '1s', { cost: 2 })
          .fixed(key + ':f', 1, '1s')
          .release(key + ':r', 'nobody')
          .all([[key + ':a', policies.bucket(3, 1, '1s')]])
          .throttle(key + ':t', 1, 1, '1s')
          .acquire(key + ':l', 1, '1s', 'x');
        assert.equal(p.length, 7);
        const [a, b, bad, released, all, throttle, lease] = await p.exec();
        assert.ok(a instanceof Decision && b instanceof Decision);
        assert.deepEqual([a.remaining, b.remaining], [4, 2]);
        assert.ok(bad instanceof RLWrongTypeError, bad.name);
        assert.equal(released, false);
        assert.equal(all.remaining, 2);
        if (backend === 'library') assert.ok(throttle instanceof RLUnsupportedError);
        else assert.equal(throttle.remaining, 1);
        assert.equal(lease.allowed, true);
        assert.equal(p.length, 0);
        assert.deepEqual(await p.exec(), []);
      });

      test('clients/headers.json: calls and fresh, every field parsed by structured-headers', async () => {
        for (const [i, { call, policy, module_only: moduleOnly }] of HEADERS.calls.entries()) {
          if (moduleOnly && backend !== 'module') continue;
          const h = (await callFor(rl, call, k(`vector-${i}`))).headers();
          assert.equal(h['RateLimit-Policy'], policy, JSON.stringify(call));
          parseFields(h);
        }
        for (const [i, { call, fields }] of HEADERS.fresh.entries()) {
          const h = (await callFor(rl, call, k(`fresh-${i}`))).headers();
          for (const [name, value] of Object.entries(fields)) assert.equal(h[name], value, `${JSON.stringify(call)} ${name}`);
          parseFields(h);
        }
      });

      test('headers of a rejected call', async () => {
        const key = k('headers');
        await rl.bucket(key, 1, 1, '1m');
        const d = await rl.bucket(key, 1, 1, '1m');
        assert.equal(d.allowed, false);
        const h = d.headers();
        const retry = Math.ceil(d.retryAfter / 1000);
        const reset = Math.ceil(d.resetAfter / 1000);
        assert.deepEqual(h, {
          'RateLimit-Policy': '"default";q=1;w=60',
          RateLimit: `"default";r=0;t=${reset}`,
          'X-RateLimit-Limit': '1',
          'X-RateLimit-Remaining': '0',
          'X-RateLimit-Reset': String(reset),
          'Retry-After': String(retry),
        });
        assert.ok(retry >= 59 && retry <= 60);
        assert.equal(d.headers('api')['RateLimit-Policy'], '"api";q=1;w=60');
      });
    });
  }
}
