'use strict';
// Without the harness's servers: the commands as sent (checked against commands.json),
// the argument rules, the HTTP fields of clients/headers.json (checked by a real
// structured-field parser), error classes, backend detection and re-detection by a mocked
// server, the fail modes, the package's version.
const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { ROOT, HEADERS, TABLE, callFor, parseFields, checkCase, mockAdapter, deadAdapter } = require('./helpers');
const rl = require('..');
const { COMMANDS } = require('../lib/commands.generated');
const {
  createLimiter,
  RateLimiter,
  Pipeline,
  policies,
  Decision,
  AllDecision,
  ThrottleDecision,
  durationMs,
  ms,
} = rl;
// The error classes, as the package exports them.
const E = rl;

const { ErrorReply } = require('redis');
const { ReplyError } = require('ioredis');

// A value of an argument's type and what the client must send for it.
function sample(arg, where) {
  switch (arg.type) {
    case 'key':
      return ['cov:key', 'cov:key'];
    case 'integer': {
      // An integer whose bound depends on another argument (EVERY n per unit) takes the
      // smallest of those bounds, so the sample is valid whatever the unit.
      const max = arg.max ?? Math.min(...Object.values(arg.max_by_unit));
      const v = Math.min(Math.max(2, arg.min), max);
      return [v, String(v)];
    }
    case 'duration':
      return ['1500ms', '1500ms'];
    case 'text':
      return ['text-1', 'text-1'];
    case 'word':
      return [arg.values[0], arg.values[0]];
    // A flag: true sends its word alone.
    case 'flag':
      return [true, null];
    // Texts the server checks by rules of its own: a value it accepts.
    case 'anchor':
      return ['mon', 'mon'];
    case 'time':
      return ['00:00', '00:00'];
    case 'zone':
      return ['UTC', 'UTC'];
    default:
      throw new Error(`${where}: argument type '${arg.type}' is new: teach the client and this test`);
  }
}

// What an option sends: its word and value, or a flag's word alone.
const sent = (opt, s) => (s === null ? [opt.name] : [opt.name, s]);

const decisionReply = (c) => (c.reply === 'released' ? 1 : [1, 5, 4, 0, 1000]);

describe('coverage of commands.json', () => {
  const commands = TABLE.commands;
  const allSpec = commands.find((c) => c.name === 'RL.ALL');

  test('every command has a method on RateLimiter and Pipeline, every policy a builder', () => {
    assert.ok(commands.length >= 10);
    for (const c of commands) {
      const spec = COMMANDS[c.name];
      assert.ok(spec, `${c.name} is not in lib/commands.generated.js: run make clients`);
      assert.equal(typeof RateLimiter.prototype[spec.method], 'function', c.name);
      assert.equal(typeof Pipeline.prototype[spec.method], 'function', c.name);
      if (c.policy) assert.equal(typeof policies[spec.policy], 'function', c.policy);
    }
  });

  for (const cmd of commands) {
    if (cmd.keys === 'counted') continue;
    test(`${cmd.name}: arguments and every option as sent to the module and the library`, async () => {
      const method = COMMANDS[cmd.name].method;
      const values = [];
      const expected = [];
      for (const arg of cmd.arguments) {
        const [v, s] = sample(arg, `${cmd.name} ${arg.name}`);
        values.push(v);
        expected.push(s);
      }
      for (const backend of ['module', 'library']) {
        const adapter = mockAdapter(() => decisionReply(cmd));
        const limiter = createLimiter(adapter, { backend });
        if (backend === 'library' && cmd.function === null) {
          await assert.rejects(limiter[method](...values), E.RLUnsupportedError);
          assert.equal(adapter.sent.length, 0);
          continue;
        }
        const head = backend === 'module' ? [cmd.name] : ['FCALL', cmd.function, '1'];
        await limiter[method](...values);
        assert.deepEqual(adapter.sent.pop(), [...head, ...expected], `${cmd.name} on the ${backend}`);
        for (const opt of cmd.options) {
          const [v, s] = sample(opt, `${cmd.name} option ${opt.name}`);
          await limiter[method](...values, { [opt.name.toLowerCase()]: v });
          assert.deepEqual(adapter.sent.pop(), [...head, ...expected, ...sent(opt, s)], `${cmd.name} ${opt.name}`);
          if (opt.type !== 'flag') continue;
          await limiter[method](...values, { [opt.name.toLowerCase()]: false });
          assert.deepEqual(adapter.sent.pop(), [...head, ...expected], `${cmd.name} ${opt.name} off`);
        }
      }
    });
  }

  test('RL.ALL: every policy and option, policies with their own options', async () => {
    for (const backend of ['module', 'library']) {
      const head = backend === 'module' ? ['RL.ALL', '1', 'k'] : ['FCALL', 'rl_all', '1', 'k'];
      const adapter = mockAdapter(() => [[1, 5, 4, 0, 1000], [1, 5, 4, 0, 1000]]);
      const limiter = createLimiter(adapter, { backend });
      for (const policy of TABLE.policies) {
        const values = [];
        const expected = [];
        for (const arg of policy.arguments) {
          const [v, s] = sample(arg, `${policy.word} ${arg.name}`);
          values.push(v);
          expected.push(s);
        }
        const builder = policies[COMMANDS[policy.command].policy];
        await limiter.all([['k', builder(...values)]]);
        assert.deepEqual(adapter.sent.pop(), [...head, policy.word, ...expected]);
        for (const opt of policy.options) {
          const [v, s] = sample(opt, `${policy.word} option ${opt.name}`);
          await limiter.all([['k', builder(...values, { [opt.name.toLowerCase()]: v })]]);
          assert.deepEqual(adapter.sent.pop(), [...head, policy.word, ...expected, ...sent(opt, s)], `${policy.word} ${opt.name}`);
        }
        // Flags written before the policy's word (SHADOW).
        for (const opt of policy.before || []) {
          const [v, s] = sample(opt, `${policy.word} flag ${opt.name}`);
          await limiter.all([['k', builder(...values, { [opt.name.toLowerCase()]: v })]]);
          assert.deepEqual(adapter.sent.pop(), [...head, ...sent(opt, s), policy.word, ...expected], `${opt.name} ${policy.word}`);
          await limiter.all([['k', builder(...values, { [opt.name.toLowerCase()]: false })]]);
          assert.deepEqual(adapter.sent.pop(), [...head, policy.word, ...expected], `${opt.name} ${policy.word} off`);
        }
      }
      for (const opt of allSpec.options) {
        const [v, s] = sample(opt, `RL.ALL option ${opt.name}`);
        await limiter.all([['k', policies.fixed(5, '1500ms')]], { [opt.name.toLowerCase()]: v });
        assert.deepEqual(adapter.sent.pop(), [...head, 'FIXED', '5', '1500ms', ...sent(opt, s)]);
      }
    }
  });
});

describe('the commands as sent', () => {
  test('RL.ALL: numkeys, keys, then policies in key order; Buffers pass through', async () => {
    const adapter = mockAdapter(() => [
      [0, 2, 0, 1000, 1000],
      [0, 2, 0, 1000, 1000],
      [1, 9, 8, 0, 1000],
    ]);
    const limiter = createLimiter(adapter, { backend: 'module' });
    const d = await limiter.all(
      [
        ['{u}:a', policies.gcra(2, 1, '1s', { delay: '3s' })],
        [Buffer.from('{u}:b'), policies.acquire(9, 60, 'job')],
      ],
      { cost: 1 },
    );
    assert.deepEqual(adapter.sent[0], ['RL.ALL', '2', '{u}:a', '{u}:b', 'GCRA', '2', '1', '1s', 'DELAY', '3s', 'ACQUIRE', '9', '60', 'job', 'COST', '1']);
    assert.ok(d instanceof AllDecision);
    assert.equal(d.allowed, false);
    assert.deepEqual(d.decisions.map((x) => x.allowed), [false, true]);
    // Each policy's window: the GCRA's time to refill from empty (2 tokens at 1 per second), the lease's ttl.
    assert.deepEqual(d.decisions.map((x) => x.window), [2000, 60000]);
  });

  test('a bare integer duration is seconds, as on the server; strings as given; ms() writes milliseconds', async () => {
    const adapter = mockAdapter();
    const limiter = createLimiter(adapter, { backend: 'module' });
    const d = await limiter.gcra('k', 5, 1, 60);
    assert.deepEqual(adapter.sent.pop(), ['RL.GCRA', 'k', '5', '1', '60']);
    assert.equal(d.window, 300000);
    assert.equal(d.headers()['RateLimit-Policy'], '"default";q=5;w=300');
    await limiter.penalty('k', 3, '1m', 60n, ms(1500), { cost: 0 });
    assert.deepEqual(adapter.sent.pop(), ['RL.PENALTY', 'k', '3', '1m', '60', '1500ms', 'COST', '0']);
    await limiter.bucket('k', 9007199254740991n, '3', '250ms');
    assert.deepEqual(adapter.sent.pop(), ['RL.BUCKET', 'k', '9007199254740991', '3', '250ms']);
    assert.deepEqual(
      ['1500ms', '60', 60, '2H', '3650d', '1.5s', 1.5, '1ns', '-1', true].map(durationMs),
      [1500, 60000, 60000, 7200000, 315360000000, null, null, null, null, null],
    );
  });

  test("a bucket's window: ceil(capacity * period / tokens) ms, exact for big counts, at most 9223372036854 ms", async () => {
    const limiter = createLimiter(mockAdapter(), { backend: 'module' });
    assert.equal((await limiter.bucket('k', 10n, '3', '1s')).window, 3334);
    assert.equal((await limiter.gcra('k', '10', 3n, '1000ms')).window, 3334);
    assert.equal((await limiter.bucket('k', 9007199254740991n, 1, '3650d')).window, 9223372036854);
    assert.equal((await limiter.bucket('k', 4503599627370496, 10000, '3ms')).window, 1351079888212);
    assert.equal((await limiter.throttle('k', 15, 30, '1m')).window, 32000);
    assert.equal(policies.share('t', 1, 6, 2, '1m').window, 180000);
    assert.equal((await limiter.pipeline().gcra('k', 5, 1, '1s').exec())[0].window, 5000);
  });
});

describe('the argument rules: refused before anything is sent, with an E.RLArgumentError', () => {
  const refused = [
    ['a float', (l) => l.gcra('k', 5.5, 1, '1s'), /capacity must be an integer/],
    ['NaN', (l) => l.gcra('k', NaN, 1, '1s'), /capacity/],
    ['infinity', (l) => l.fixed('k', Infinity, '1s'), /limit/],
    ['a boolean', (l) => l.fixed('k', true, '1s'), /limit/],
    ['a boolean duration', (l) => l.fixed('k', 1, true), /window must be a duration/],
    ['below the range', (l) => l.fixed('k', 0, '1s'), /from 1 to 9007199254740991/],
    ['above the range', (l) => l.sliding('k', 100001, '1s'), /from 1 to 100000/],
    ['an integer string out of range', (l) => l.fixed('k', '9007199254740992', '1s'), /limit/],
    ['a non-integer string', (l) => l.fixed('k', '1e3', '1s'), /limit/],
    ['1.5ms', (l) => l.gcra('k', 5, 1, '1.5ms'), /period must be a duration/],
    ['1ns', (l) => l.gcra('k', 5, 1, '1ns'), /period/],
    ['a float of seconds', (l) => l.gcra('k', 5, 1, 1.5), /period/],
    ['a zero duration', (l) => l.gcra('k', 5, 1, 0), /period/],
    ['more than ten years', (l) => l.fixed('k', 5, '3651d'), /window/],
    ['a negative DELAY', (l) => l.gcra('k', 5, 1, '1s', { delay: -1 }), /delay/],
    ['COST with REFUND', (l) => l.gcra('k', 5, 1, '1s', { cost: 1, refund: 1 }), /exclude each other/],
    ['REFUND with DEBIT', (l) => l.fixed('k', 5, '1s', { refund: 1, debit: 1 }), /exclude each other/],
    ['DELAY with REFUND', (l) => l.gcra('k', 5, 1, '1s', { delay: '1s', refund: 1 }), /exclude each other/],
    ['an option the command does not take', (l) => l.sliding('k', 5, '1s', { debit: 1 }), /unknown option 'debit'/],
    ['options that are not an object', (l) => l.fixed('k', 5, '1s', 3), /options must be an object/],
    ['a shadow flag that is not a boolean', (l) => l.gcra('k', 5, 1, '1s', { shadow: 1 }), /shadow must be true or false, not 1/],
    ['a shadow flag given as a string', (l) => l.quota('k', 5, 'day', { shadow: 'true' }), /shadow must be true or false/],
    ['SHADOW on a command without it', (l) => l.acquire('k', 5, '1m', 'id', { shadow: true }), /unknown option 'shadow': RL.ACQUIRE takes no options/],
    ['SHADOW on RL.ALL itself (it goes on a policy)', (l) => l.all([['k', policies.fixed(1, 1)]], { shadow: true }), /unknown option 'shadow'/],
    ['an empty lease id', (l) => l.acquire('k', 5, '1m', ''), /id must be a string or Buffer of 1 to 256 bytes/],
    ['a lease id over 256 bytes', (l) => l.acquire('k', 5, '1m', 'é'.repeat(129)), /258 bytes/],
    ['a key that is not a string', (l) => l.fixed(42, 5, '1s'), /a key must be a string/],
    ['RL.ALL without entries', (l) => l.all([]), /1 to 16/],
    ['RL.ALL over 16 keys', (l) => l.all(Array.from({ length: 17 }, (_, i) => [`k${i}`, policies.fixed(1, 1)])), /1 to 16/],
    ['an RL.ALL entry without a policy', (l) => l.all([['k', 5]]), /policies\.\*/],
    ['a DELAY outside a GCRA policy', (l) => l.all([['k', policies.fixed(1, 1)]], { delay: 1 }), /unknown option 'delay'/],
  ];
  for (const [what, call, message] of refused) {
    test(what, async () => {
      const adapter = mockAdapter();
      const limiter = createLimiter(adapter, { backend: 'module' });
      const check = (e) => {
        assert.ok(e instanceof E.RLArgumentError && e instanceof E.RLError, `${e.name}: ${e.message}`);
        assert.match(e.message, message);
        assert.equal(e.code, undefined); // the client's, not the server's
        return true;
      };
      await assert.rejects(call(limiter), check);
      assert.throws(() => call(limiter.pipeline()), check);
      assert.deepEqual(adapter.sent, []);
    });
  }
  test('policy builders, createLimiter and withLease refuse alike', () => {
    assert.throws(() => policies.gcra(1, 1, '1s', { cost: 1 }), E.RLArgumentError);
    assert.throws(() => policies.fixed(1, '1s', { shadow: 'yes' }), /FIXED policy: shadow must be true or false/);
    assert.throws(() => policies.fixed(1.5, '1s'), E.RLArgumentError);
    assert.throws(() => createLimiter({}), E.RLArgumentError);
    assert.throws(() => createLimiter(mockAdapter(), { backend: 'cluster' }), E.RLArgumentError);
    assert.throws(() => createLimiter(mockAdapter(), { onConnectionError: 'open' }), E.RLArgumentError);
    assert.throws(() => createLimiter(mockAdapter(), { timeout: 0.5 }), E.RLArgumentError);
    assert.throws(() => ms(1.5), E.RLArgumentError);
  });
});

describe('HTTP fields: every case of clients/headers.json, each parsed by structured-headers', () => {
  for (const { call, policy } of HEADERS.calls) {
    test(`calls: ${JSON.stringify(call)}`, async () => {
      // q is the server's limit; a fail mode's decision reports the call's own.
      const limiter = createLimiter(deadAdapter(0), { backend: 'module', onConnectionError: 'allow' });
      const h = (await callFor(limiter, call, 'k')).headers();
      assert.equal(h['RateLimit-Policy'], policy);
      parseFields(h);
    });
  }
  for (const c of HEADERS.failures) {
    test(`failures: ${c.mode} ${JSON.stringify(c.call)}`, async () => {
      for (const adapter of [deadAdapter(0), deadAdapter(null)]) {
        const limiter = createLimiter(adapter, { backend: 'module', onConnectionError: c.mode, timeout: 20 });
        const d = await callFor(limiter, c.call, 'k');
        assert.ok(d.error instanceof E.RLConnectionError);
        checkCase(d, c);
        const [slot] = await callFor(limiter.pipeline(), c.call, 'k').exec();
        checkCase(slot, c);
        assert.deepEqual(slot.headers(), d.headers());
      }
    });
  }
  for (const { call, name, policy, error } of HEADERS.names) {
    test(`names: ${JSON.stringify(name)}`, async () => {
      const d = await callFor(createLimiter(mockAdapter(), { backend: 'module' }), call, 'k');
      if (error) {
        assert.throws(() => d.headers(name), E.RLArgumentError);
      } else {
        assert.equal(d.headers(name)['RateLimit-Policy'], policy);
        const parsed = parseFields(d.headers(name));
        assert.equal(parsed.policy[0][0], name);
      }
    });
  }
  test('RL.ALL: names given per policy; integers clamped to 999999999999999; w never 0', () => {
    const gcra = policies.gcra(10, 1, '1s');
    const d = new AllDecision([[1, 10, 9, 0, 100], [1, 10, 9, 0, 100], [1, 2e15, 2e15, 0, 2e18]], ['a', 'b'], [gcra, policies.gcra(2e15, 1, '1s')]);
    assert.equal(d.headers()['RateLimit-Policy'], '"gcra-1";q=10;w=10, "gcra-2";q=999999999999999;w=9223372037');
    assert.equal(d.headers(['burst', 'big'])['RateLimit'], '"burst";r=9;t=1, "big";r=999999999999999;t=999999999999999');
    assert.throws(() => d.headers(['one']), E.RLArgumentError);
    parseFields(d.headers(['burst', 'big']));
    assert.equal(new Decision([1, 5, 4, 0, 0], null).headers()['RateLimit-Policy'], '"default";q=5');
    assert.equal(new Decision([1, 5, 4, 0, 0], 0).headers()['RateLimit-Policy'], '"default";q=5');
  });
  test('CL.THROTTLE: seconds as given; no Retry-After when allowed or never', () => {
    const t = new ThrottleDecision([1, 16, 0, 3, 20], 60000);
    assert.deepEqual([t.limited, t.allowed, t.retryAfterSeconds, t.resetAfterSeconds], [true, false, 3, 20]);
    assert.equal(t.headers()['Retry-After'], '3');
    assert.equal(t.headers()['RateLimit-Policy'], '"default";q=16;w=60');
    assert.equal(new ThrottleDecision([0, 16, 15, -1, 2], 60000).headers()['Retry-After'], undefined);
    assert.equal(new Decision([0, 5, 5, -1, 0], 1000).headers()['Retry-After'], undefined);
  });
});

describe('errors', () => {
  const cases = [
    ['ERR limit must be an integer from 1 to 9007199254740991', E.RLArgumentError, 'ERR'],
    ['WRONGTYPE Operation against a key holding the wrong kind of value', E.RLWrongTypeError, 'WRONGTYPE'],
    ["OOM command not allowed when used memory > 'maxmemory'.", E.RLOutOfMemoryError, 'OOM'],
    ["NOPERM User ada has no permissions to run the 'rl.fixed' command", E.RLServerError, 'NOPERM'],
    ["ERR unknown command 'RL.FIXED', with args beginning with: 'k'", E.RLNotLoadedError, 'ERR'],
    ['ERR Function not found', E.RLNotLoadedError, 'ERR'],
  ];
  for (const [Reply, lib] of [
    [ErrorReply, 'node-redis'],
    [ReplyError, 'ioredis'],
  ]) {
    test(`${lib}'s reply errors become typed errors, never swallowed`, async () => {
      for (const [message, Type, code] of cases) {
        const limiter = createLimiter(
          mockAdapter(() => {
            throw new Reply(message);
          }),
          { backend: 'module' },
        );
        await assert.rejects(limiter.fixed('k', 5, '1m'), (e) => {
          assert.ok(e instanceof Type, `${message}: ${e.name}`);
          assert.ok(e instanceof E.RLError);
          assert.equal(e.code, code);
          assert.equal(e.command, 'RL.FIXED');
          assert.equal(e.cause.message, message);
          return true;
        });
        const [slot] = await limiter.pipeline().fixed('k', 5, '1m').exec();
        assert.ok(slot instanceof Type);
      }
    });
  }

  test('NotLoaded: neither COMMAND INFO rl.gcra nor FUNCTION LIST LIBRARYNAME rl finds RL', async () => {
    const adapter = mockAdapter((args) => {
      if (args[0] === 'COMMAND') return [null];
      if (args[0] === 'FUNCTION') return [];
      throw new Error('no RL command may be sent');
    });
    const limiter = createLimiter(adapter);
    await assert.rejects(limiter.gcra('k', 5, 1, '1s'), (e) => e instanceof E.RLNotLoadedError && /--loadmodule/.test(e.message) && /FUNCTION LOAD/.test(e.message));
    assert.deepEqual(adapter.sent, [
      ['COMMAND', 'INFO', 'rl.gcra'],
      ['FUNCTION', 'LIST', 'LIBRARYNAME', 'rl'],
    ]);
    const results = await limiter.pipeline().gcra('k', 5, 1, '1s').exec().catch((e) => e);
    assert.ok(results instanceof E.RLNotLoadedError);
  });

  test('detection: the module, else the library (RESP2 lists and RESP3 maps), cached', async () => {
    const module = mockAdapter((args) => (args[0] === 'COMMAND' ? [['rl.gcra', -5, ['write']]] : [1, 5, 4, 0, 0]));
    const a = createLimiter(module);
    await a.gcra('k', 5, 1, '1s');
    await a.gcra('k', 5, 1, '1s');
    assert.deepEqual(module.sent.map((s) => s[0]), ['COMMAND', 'RL.GCRA', 'RL.GCRA']);
    for (const listing of [
      [['library_name', 'rl', 'engine', 'LUA', 'functions', [['name', 'rl_gcra', 'description', null, 'flags', []]]]],
      [new Map([['library_name', 'rl'], ['engine', 'LUA'], ['functions', [new Map([['name', 'rl_gcra']])]]])],
    ]) {
      const lib = mockAdapter((args) => (args[0] === 'COMMAND' ? [null] : args[0] === 'FUNCTION' ? listing : [1, 5, 4, 0, 0]));
      const b = createLimiter(lib);
      assert.equal(await b.backend(), 'library');
      assert.equal(await b.supports('RL.GCRA'), true);
      assert.equal(await b.supports('RL.SHARE'), false);
      await b.gcra('k', 5, 1, '1s');
      assert.deepEqual(lib.sent.at(-1), ['FCALL', 'rl_gcra', '1', 'k', '5', '1', '1s']);
    }
    // COMMAND refused (ACL): the library is still found.
    const acl = mockAdapter((args) => {
      if (args[0] === 'COMMAND') throw new ReplyError("NOPERM this user has no permissions to run the 'command|info' command");
      return [['library_name', 'rl', 'functions', []]];
    });
    assert.equal(await createLimiter(acl).backend(), 'library');
  });


  // A server whose backend changes under the client: `state.backend` is what it has now
  // ('module', 'library', or null); `state.commands` the module commands it knows.
  function changingServer(state) {
    return mockAdapter((args) => {
      const [name] = args;
      if (name === 'COMMAND') return state.backend === 'module' && state.commands.includes(String(args[2]).toUpperCase()) ? [['x']] : [null];
      if (name === 'FUNCTION') return state.backend === 'library' ? [['library_name', 'rl', 'functions', state.functions.map((f) => ['name', f])]] : [];
      if (name === 'FCALL') {
        if (state.backend !== 'library' || !state.functions.includes(args[1])) throw new ReplyError('ERR Function not found');
        return [1, 5, 4, 0, 1000];
      }
      if (state.backend !== 'module' || !state.commands.includes(name)) throw new ErrorReply(`ERR unknown command '${name}', with args beginning with: 'k'`);
      return [1, 5, 4, 0, 1000];
    });
  }

  test('re-detection: the server restarted with only the library: detected again, the call sent once more', async () => {
    const state = { backend: 'module', commands: ['RL.GCRA'], functions: ['rl_gcra'] };
    const adapter = changingServer(state);
    const limiter = createLimiter(adapter);
    assert.equal((await limiter.gcra('k', 5, 1, '1s')).remaining, 4);
    state.backend = 'library';
    adapter.sent.length = 0;
    assert.equal((await limiter.gcra('k', 5, 1, '1s')).remaining, 4);
    assert.deepEqual(adapter.sent.map((a) => a.slice(0, 2).join(' ')), ['RL.GCRA k', 'COMMAND INFO', 'FUNCTION LIST', 'FCALL rl_gcra']);
    assert.equal(await limiter.backend(), 'library');
    // and back, in a pipeline: each failed call sent once more, the others not
    state.backend = 'module';
    adapter.sent.length = 0;
    const results = await limiter.pipeline().gcra('a', 5, 1, '1s').gcra('b', 5, 1, '1s').exec();
    assert.deepEqual(results.map((d) => d.remaining), [4, 4]);
    assert.deepEqual(adapter.sent.map((a) => a[0]), ['FCALL', 'FCALL', 'COMMAND', 'RL.GCRA', 'RL.GCRA']);
    // Neither: E.RLNotLoadedError, and nothing sent a third time.
    state.backend = null;
    adapter.sent.length = 0;
    await assert.rejects(limiter.gcra('k', 5, 1, '1s'), E.RLNotLoadedError);
    assert.equal(adapter.sent.filter((a) => a[0] === 'RL.GCRA').length, 1);
    // detect() asks every time.
    state.backend = 'library';
    adapter.sent.length = 0;
    assert.equal(await limiter.detect(), 'library');
    assert.equal(await limiter.detect(), 'library');
    assert.equal(adapter.sent.filter((a) => a[0] === 'FUNCTION').length, 2);
  });

  test('a command newer than the server\'s RL: E.RLUnsupportedError after one more try, no special case', async () => {
    for (const backend of ['module', 'library']) {
      const adapter = changingServer({ backend, commands: ['RL.GCRA'], functions: ['rl_gcra'] });
      const limiter = createLimiter(adapter);
      await assert.rejects(limiter.share('k', 't', 1, 5, 1, '1s'), (e) => e instanceof E.RLUnsupportedError && /older/.test(e.message));
      assert.equal(adapter.sent.filter((a) => a.includes('k')).length, 2);
      const [slot] = await limiter.pipeline().share('k', 't', 1, 5, 1, '1s').exec();
      assert.ok(slot instanceof E.RLUnsupportedError);
      assert.equal(await limiter.supports('RL.SHARE'), false);
      assert.equal(await limiter.supports('RL.GCRA'), true);
    }
  });

  test('a forced backend is not detected again: the missing command is E.RLNotLoadedError', async () => {
    const adapter = changingServer({ backend: 'library', commands: [], functions: ['rl_gcra'] });
    await assert.rejects(createLimiter(adapter, { backend: 'module' }).gcra('k', 5, 1, '1s'), E.RLNotLoadedError);
    assert.deepEqual(adapter.sent.map((a) => a[0]), ['RL.GCRA']);
  });
});

describe('the deadline and the fail modes', () => {
  const MARGIN = 60;
  for (const [what, adapter] of [
    ['a server that never answers', () => deadAdapter(null)],
    ['a refused connection', () => deadAdapter(0)],
  ]) {
    test(`${what}: raise (default), allow, deny, within the deadline`, async () => {
      for (const timeout of [30, 100]) {
        const t0 = Date.now();
        await assert.rejects(createLimiter(adapter(), { timeout }).gcra('k', 5, 1, '1s'), E.RLConnectionError);
        assert.ok(Date.now() - t0 < timeout + MARGIN, `took ${Date.now() - t0} ms`);
      }
      const open = await createLimiter(adapter(), { onConnectionError: 'allow' }).fixed('k', 5, '1m');
      assert.deepEqual([open.allowed, open.limit, open.remaining, open.retryAfter, open.resetAfter], [true, 5, 5, 0, 0]);
      assert.ok(open.error instanceof E.RLConnectionError);
      const seen = [];
      const closed = createLimiter(adapter(), {
        backend: 'module',
        onConnectionError: (err, command) => {
          seen.push([err instanceof E.RLConnectionError, command]);
          return 'deny';
        },
      });
      const t0 = Date.now();
      const d = await closed.gcra('k', 5, 1, '1s');
      assert.ok(Date.now() - t0 < 100 + MARGIN);
      assert.deepEqual([d.allowed, d.limit, d.remaining, d.retryAfter, d.resetAfter], [false, 5, 0, 1000, 1000]);
      assert.deepEqual(seen, [[true, 'RL.GCRA']]);
      const [p] = await closed.pipeline().all([['k', policies.fixed(3, '1s')]]).exec();
      assert.deepEqual([p.allowed, p.decisions.length, p.decisions[0].remaining], [false, 1, 0]);
      const t = await closed.throttle('k', 4, 1, '1s');
      assert.deepEqual([t.limited, t.limit, t.remaining, t.retryAfterSeconds], [true, 5, 0, 1]);
      // A release is not a decision: its connection error is always raised.
      await assert.rejects(closed.release('k', 'id'), E.RLConnectionError);
      // Fail open on a lease: fn runs, and no release is sent for a lease never taken.
      const openLimiter = createLimiter(adapter(), { backend: 'module', onConnectionError: 'allow' });
      assert.equal(await openLimiter.withLease('k', 1, '1m', 'id', () => 7), 7);
    });
  }
  test('no reply in time is an E.RLTimeoutError, a kind of E.RLConnectionError', async () => {
    await assert.rejects(createLimiter(deadAdapter(null), { timeout: 10 }).gcra('k', 5, 1, '1s'), (e) => e instanceof E.RLTimeoutError && /10 ms/.test(e.message));
  });
});

test('the package version is the module version (Cargo.toml [package])', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8'));
  const cargo = fs.readFileSync(path.join(ROOT, 'Cargo.toml'), 'utf8');
  const section = /^\[package\]\s*$([\s\S]*?)(?=^\[|(?![\s\S]))/m.exec(cargo);
  assert.ok(section, 'Cargo.toml has no [package]');
  const version = /^version\s*=\s*"([^"]+)"/m.exec(section[1]);
  assert.ok(version, 'Cargo.toml [package] has no version');
  assert.equal(pkg.version, version[1]);
  assert.equal(rl.VERSION, version[1]);
});

test('the ES module entry exports the same objects', async () => {
  const esm = await import('../index.mjs');
  for (const name of Object.keys(rl)) assert.equal(esm[name], rl[name], name);
  assert.equal(esm.default, rl);
});
