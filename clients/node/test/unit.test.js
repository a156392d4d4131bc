'use strict';
// Without the harness's servers: the commands as sent (checked against commands.json),
// headers, error classes, backend detection by a mocked probe, fail open / closed on a
// real dead connection, the package's version.
const { describe, test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { ROOT, freePort } = require('./helpers');
const rl = require('..');
const {
  createLimiter,
  RateLimiter,
  Pipeline,
  policies,
  Decision,
  AllDecision,
  ThrottleDecision,
  durationMs,
  RLError,
  RLServerError,
  RLArgumentError,
  RLWrongTypeError,
  RLOutOfMemoryError,
  RLNotLoadedError,
  RLUnsupportedError,
  RLConnectionError,
} = rl;

// An adapter that records what it is sent and answers from `respond`.
function mockAdapter(respond = () => [1, 5, 4, 0, 1000]) {
  const sent = [];
  const adapter = {
    kind: 'mock',
    sent,
    async call(args) {
      sent.push(args.map((a) => (Buffer.isBuffer(a) ? a.toString() : a)));
      return respond(args);
    },
    async batch(commands) {
      const replies = [];
      const errors = [];
      for (const args of commands) {
        try {
          replies.push(await adapter.call(args));
        } catch (error) {
          errors[replies.length] = error;
          replies.push(undefined);
        }
      }
      return { replies, errors };
    },
  };
  return adapter;
}

const { ErrorReply } = require('redis');
const { ReplyError } = require('ioredis');

// ---------------------------------------------------------------------------
// Coverage: every command and option of commands.json has a method and a parameter.

// The repository's commands.json (generated from the command table: make commands-json).
function loadSpec() {
  const file = path.join(ROOT, 'commands.json');
  return { file, spec: JSON.parse(fs.readFileSync(file, 'utf8')) };
}

// Each command's method, and each RL.ALL policy's builder.
const METHODS = {
  'RL.FIXED': 'fixed',
  'RL.SLIDING': 'sliding',
  'RL.SLIDINGCOUNTER': 'slidingCounter',
  'RL.BUCKET': 'bucket',
  'RL.GCRA': 'gcra',
  'CL.THROTTLE': 'throttle',
  'RL.ALL': 'all',
  'RL.ACQUIRE': 'acquire',
  'RL.RELEASE': 'release',
  'RL.PENALTY': 'penalty',
  'RL.SHARE': 'share',
};
const POLICY_BUILDERS = {
  FIXED: 'fixed',
  SLIDING: 'sliding',
  SLIDINGCOUNTER: 'slidingCounter',
  BUCKET: 'bucket',
  GCRA: 'gcra',
  ACQUIRE: 'acquire',
  PENALTY: 'penalty',
  SHARE: 'share',
};

// A value of an argument's type and what the client must send for it.
function sample(arg, where) {
  switch (arg.type) {
    case 'key':
      return ['cov:key', 'cov:key'];
    case 'integer': {
      const lo = arg.min === undefined ? 1 : arg.min;
      const hi = arg.max === undefined ? 2 : arg.max;
      const v = Math.min(Math.max(2, lo), hi);
      return [v, String(v)];
    }
    case 'duration':
      return [1500, '1500ms'];
    case 'text':
      return ['text-1', 'text-1'];
    default:
      throw new Error(`${where}: argument type '${arg.type}' is new: teach the client and this test`);
  }
}

const optionParam = (name) => name.toLowerCase();

describe('coverage of commands.json', () => {
  const { file, spec } = loadSpec();
  const commands = spec.commands;
  const allSpec = commands.find((c) => c.name === 'RL.ALL');
  const allOptions = new Set(((allSpec && allSpec.options) || []).map((o) => o.name));

  test(`every command has a method (${path.relative(ROOT, file)})`, () => {
    assert.ok(Array.isArray(commands) && commands.length >= 10, `${file} lists no commands`);
    const missing = commands.filter((c) => !METHODS[c.name] || typeof RateLimiter.prototype[METHODS[c.name]] !== 'function');
    assert.deepEqual(missing.map((c) => c.name), [], 'commands without a method: add one and map it in METHODS');
    for (const c of commands) {
      assert.equal(typeof Pipeline.prototype[METHODS[c.name]], 'function', `${c.name}: no pipeline method`);
    }
  });

  for (const cmd of commands) {
    if (cmd.name === 'RL.ALL' || !Array.isArray(cmd.arguments)) continue;
    test(`${cmd.name}: arguments and every option as sent to the module and the library`, async () => {
      const method = METHODS[cmd.name];
      const values = [];
      const expected = [];
      for (const arg of cmd.arguments) {
        const [v, s] = sample(arg, `${cmd.name} ${arg.name}`);
        values.push(v);
        expected.push(s);
      }
      for (const backend of ['module', 'library']) {
        const adapter = mockAdapter((args) => (String(args[0]).toUpperCase() === 'FCALL' && args[1] === 'rl_release' ? 1 : cmd.name === 'RL.RELEASE' ? 1 : [1, 5, 4, 0, 1000]));
        const limiter = createLimiter(adapter, { backend });
        if (backend === 'library' && cmd.function === null) {
          await assert.rejects(limiter[method](...values), RLUnsupportedError);
          assert.equal(adapter.sent.length, 0);
          continue;
        }
        const head = backend === 'module' ? [cmd.name] : ['FCALL', cmd.function, '1'];
        await limiter[method](...values);
        assert.deepEqual(adapter.sent.pop(), [...head, ...expected], `${cmd.name} on the ${backend}`);
        for (const opt of cmd.options || []) {
          const [v, s] = sample(opt, `${cmd.name} option ${opt.name}`);
          await limiter[method](...values, { [optionParam(opt.name)]: v }).catch((e) => {
            throw new Error(`${cmd.name}: option ${opt.name} has no parameter ${optionParam(opt.name)}: ${e.message}`);
          });
          assert.deepEqual(adapter.sent.pop(), [...head, ...expected, opt.name, s], `${cmd.name} ${opt.name}`);
        }
      }
    });
  }

  test('RL.ALL: every policy and option, policies with their own options', async () => {
    assert.ok(allSpec, 'commands.json has no RL.ALL');
    // The policies: commands.json's own list when it has one, else each command's policy
    // word with the command's arguments after the key and its options that RL.ALL does
    // not take itself (GCRA's DELAY).
    const listed = Array.isArray(spec.policies) && spec.policies.every((p) => p && typeof p.word === 'string' && Array.isArray(p.arguments));
    const all = listed
      ? spec.policies.map((p) => ({ word: p.word, arguments: p.arguments, options: p.options || [] }))
      : commands
          .filter((c) => c.policy && Array.isArray(c.arguments))
          .map((c) => ({ word: c.policy, arguments: c.arguments.slice(1), options: (c.options || []).filter((o) => !allOptions.has(o.name)) }));
    for (const c of commands) {
      if (c.policy) assert.ok(all.some((p) => p.word === c.policy), `policy ${c.policy} of ${c.name} is not listed`);
    }
    const missing = all.map((p) => p.word).filter((w) => typeof policies[POLICY_BUILDERS[w]] !== 'function');
    assert.deepEqual(missing, [], 'RL.ALL policies without a builder in policies.*: add one and map it in POLICY_BUILDERS');
    for (const backend of ['module', 'library']) {
      const head = backend === 'module' ? ['RL.ALL', '1', 'k'] : ['FCALL', 'rl_all', '1', 'k'];
      for (const policy of all) {
        const adapter = mockAdapter(() => [[1, 5, 4, 0, 1000], [1, 5, 4, 0, 1000]]);
        const limiter = createLimiter(adapter, { backend });
        const values = [];
        const expected = [];
        for (const arg of policy.arguments) {
          const [v, s] = sample(arg, `${policy.word} ${arg.name}`);
          values.push(v);
          expected.push(s);
        }
        const builder = policies[POLICY_BUILDERS[policy.word]];
        await limiter.all([['k', builder(...values)]]);
        assert.deepEqual(adapter.sent.pop(), [...head, policy.word, ...expected]);
        for (const opt of policy.options) {
          const [v, s] = sample(opt, `${policy.word} option ${opt.name}`);
          let built;
          try {
            built = builder(...values, { [optionParam(opt.name)]: v });
          } catch (e) {
            throw new Error(`policy ${policy.word}: option ${opt.name} has no parameter ${optionParam(opt.name)}: ${e.message}`);
          }
          await limiter.all([['k', built]]);
          assert.deepEqual(adapter.sent.pop(), [...head, policy.word, ...expected, opt.name, s], `${policy.word} ${opt.name}`);
        }
      }
      const adapter = mockAdapter(() => [[1, 5, 4, 0, 1000], [1, 5, 4, 0, 1000]]);
      const limiter = createLimiter(adapter, { backend });
      for (const opt of allSpec.options || []) {
        const [v, s] = sample(opt, `RL.ALL option ${opt.name}`);
        await limiter.all([['k', policies.fixed(5, 1500)]], { [optionParam(opt.name)]: v });
        assert.deepEqual(adapter.sent.pop(), [...head, 'FIXED', '5', '1500ms', opt.name, s]);
      }
    }
  });

  test('RL.SHARE (newer than some servers): its method and RL.ALL policy', async () => {
    // Until commands.json lists it: RL.SHARE key tenant weight capacity tokens period.
    const adapter = mockAdapter((args) => (args.includes('rl_all') ? [[1, 10, 9, 0, 100], [1, 10, 9, 0, 100]] : [1, 10, 9, 0, 100]));
    const limiter = createLimiter(adapter, { backend: 'module' });
    await limiter.share('k', 'tenant-a', 3, 10, 1, 1500, { cost: 2 });
    const lib = createLimiter(adapter, { backend: 'library' });
    await lib.share('k', 'tenant-a', 3, 10, 1, '1s', { debit: 1 });
    await lib.all([['k', policies.share('tenant-a', 3, 10, 1, '1s')]], { refund: 1 });
    assert.deepEqual(adapter.sent, [
      ['RL.SHARE', 'k', 'tenant-a', '3', '10', '1', '1500ms', 'COST', '2'],
      ['FCALL', 'rl_share', '1', 'k', 'tenant-a', '3', '10', '1', '1s', 'DEBIT', '1'],
      ['FCALL', 'rl_all', '1', 'k', 'SHARE', 'tenant-a', '3', '10', '1', '1s', 'REFUND', '1'],
    ]);
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
        [Buffer.from('{u}:b'), policies.acquire(9, 60000, 'job')],
      ],
      { cost: 1 },
    );
    assert.deepEqual(adapter.sent[0], ['RL.ALL', '2', '{u}:a', '{u}:b', 'GCRA', '2', '1', '1s', 'DELAY', '3s', 'ACQUIRE', '9', '60000ms', 'job', 'COST', '1']);
    assert.ok(d instanceof AllDecision);
    assert.equal(d.allowed, false);
    assert.deepEqual(d.decisions.map((x) => x.allowed), [false, true]);
    // The GCRA's window: its time to refill from empty (2 tokens at 1 per second).
    assert.equal(d.window, 2000);
  });

  test('RL.ALL: the combined window is the rate limit the combined limit comes from, not a PENALTY policy', async () => {
    const adapter = mockAdapter(() => [
      [1, 10, 8, 0, 2000],
      [1, 3, 3, 0, 0],
      [1, 10, 8, 0, 2000],
    ]);
    const limiter = createLimiter(adapter, { backend: 'library' });
    const d = await limiter.all([
      ['{u}:p', policies.penalty(3, '15m', '1m', '1h')],
      ['{u}:r', policies.gcra(10, 1, '1s')],
    ]);
    assert.deepEqual(adapter.sent[0], ['FCALL', 'rl_all', '2', '{u}:p', '{u}:r', 'PENALTY', '3', '15m', '1m', '1h', 'GCRA', '10', '1', '1s']);
    // A bucket's window is its time to refill from empty: 10 tokens at 1 per second.
    assert.deepEqual([d.limit, d.remaining, d.window], [10, 8, 10000]);
    assert.equal(d.headers()['RateLimit-Policy'], '"default";q=10;w=10');
  });

  test('bigint and string counts; durations in ms, strings as given', async () => {
    const adapter = mockAdapter();
    const limiter = createLimiter(adapter, { backend: 'module' });
    await limiter.bucket('k', 9007199254740991n, '3', 250);
    await limiter.penalty('k', 3, '1m', 60000, '1h', { cost: 0 });
    assert.deepEqual(adapter.sent, [
      ['RL.BUCKET', 'k', '9007199254740991', '3', '250ms'],
      ['RL.PENALTY', 'k', '3', '1m', '60000ms', '1h', 'COST', '0'],
    ]);
    // A bucket's window (RateLimit-Policy's w): ceil(capacity * period / tokens) ms, exact
    // for bigint and string counts, at most 9223372036854 ms.
    assert.equal((await limiter.bucket('k', 10n, '3', '1s')).window, 3334);
    assert.equal((await limiter.gcra('k', '10', 3n, 1000)).window, 3334);
    assert.equal((await limiter.bucket('k', 9007199254740991n, 1, '3650d')).window, 9223372036854);
    assert.equal((await limiter.bucket('k', 4503599627370496, 10000, 3)).window, 1351079888212);
    assert.equal((await limiter.throttle('k', 15, 30, '1m')).window, 32000);
    assert.equal((await limiter.throttle('k', '15', 30n, 60000)).window, 32000);
    assert.equal(policies.share('t', 1, 6, 2, '1m').window, 180000);
    assert.equal((await limiter.pipeline().gcra('k', 5, 1, '1s').exec())[0].window, 5000);
    assert.equal(durationMs('1500ms'), 1500);
    assert.equal(durationMs('60'), 60000);
    assert.equal(durationMs('2H'), 7200000);
    assert.equal(durationMs('3650d'), 315360000000);
    assert.equal(durationMs(42), 42);
    assert.equal(durationMs('1.5s'), null);
    assert.throws(() => limiter.pipeline().fixed('k', 1, {}), TypeError);
    assert.throws(() => policies.gcra(1, 1, '1s', { cost: 1 }), TypeError);
  });
});

describe('headers', () => {
  test('allowed: the IETF fields and X-RateLimit-*, no Retry-After', () => {
    const d = new Decision([1, 100, 99, 0, 1500], 60000);
    assert.deepEqual(d.headers(), {
      'RateLimit-Policy': '"default";q=100;w=60',
      RateLimit: '"default";r=99;t=2',
      'X-RateLimit-Limit': '100',
      'X-RateLimit-Remaining': '99',
      'X-RateLimit-Reset': '2',
    });
  });
  test('rejected: Retry-After rounded up; never (-1): none; windows round up to seconds', () => {
    const d = new Decision([0, 5, 0, 1001, 4001], 1500);
    assert.equal(d.retryAfter, 1001);
    assert.deepEqual(d.headers(), {
      'RateLimit-Policy': '"default";q=5;w=2',
      RateLimit: '"default";r=0;t=5',
      'X-RateLimit-Limit': '5',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': '5',
      'Retry-After': '2',
    });
    const never = new Decision([0, 5, 5, -1, 0], 1000);
    assert.equal(never.retryAfter, null);
    assert.equal(never.headers()['Retry-After'], undefined);
    assert.equal(never.headers()['RateLimit'], '"default";r=5;t=0');
  });
  test('CL.THROTTLE: seconds as given', () => {
    const t = new ThrottleDecision([1, 16, 0, 3, 20], 60000);
    assert.deepEqual([t.limited, t.allowed, t.retryAfterSeconds, t.resetAfterSeconds], [true, false, 3, 20]);
    assert.equal(t.headers()['Retry-After'], '3');
    assert.equal(t.headers()['RateLimit-Policy'], '"default";q=16;w=60');
    const ok = new ThrottleDecision([0, 16, 15, -1, 2], 60000);
    assert.equal(ok.retryAfterSeconds, null);
    assert.equal(ok.headers()['Retry-After'], undefined);
  });
});

describe('errors', () => {
  const cases = [
    ['ERR limit must be an integer from 1 to 9007199254740991', RLArgumentError, 'ERR'],
    ['WRONGTYPE Operation against a key holding the wrong kind of value', RLWrongTypeError, 'WRONGTYPE'],
    ["OOM command not allowed when used memory > 'maxmemory'.", RLOutOfMemoryError, 'OOM'],
    ["NOPERM User ada has no permissions to run the 'rl.fixed' command", RLServerError, 'NOPERM'],
    ["ERR unknown command 'RL.FIXED', with args beginning with: 'k'", RLNotLoadedError, 'ERR'],
    ['ERR Function not found', RLNotLoadedError, 'ERR'],
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
          assert.ok(e instanceof RLError);
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

  test('RL.SHARE unknown to an older RL is unsupported, not "not loaded"', async () => {
    const limiter = createLimiter(
      mockAdapter(() => {
        throw new ReplyError("ERR unknown command 'RL.SHARE', with args beginning with: 'k'");
      }),
      { backend: 'module' },
    );
    await assert.rejects(limiter.share('k', 't', 1, 5, 1, '1s'), (e) => e instanceof RLUnsupportedError && /older/.test(e.message));
  });

  test('NotLoaded: neither COMMAND INFO rl.gcra nor FUNCTION LIST LIBRARYNAME rl finds RL', async () => {
    const adapter = mockAdapter((args) => {
      if (args[0] === 'COMMAND') return [null];
      if (args[0] === 'FUNCTION') return [];
      throw new Error('no RL command may be sent');
    });
    const limiter = createLimiter(adapter);
    await assert.rejects(limiter.gcra('k', 5, 1, '1s'), (e) => e instanceof RLNotLoadedError && /--loadmodule/.test(e.message) && /FUNCTION LOAD/.test(e.message));
    assert.deepEqual(adapter.sent, [
      ['COMMAND', 'INFO', 'rl.gcra'],
      ['FUNCTION', 'LIST', 'LIBRARYNAME', 'rl'],
    ]);
    const results = await limiter.pipeline().gcra('k', 5, 1, '1s').exec().catch((e) => e);
    assert.ok(results instanceof RLNotLoadedError);
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

  test('a bad client or option is refused at once', () => {
    assert.throws(() => createLimiter({}), TypeError);
    assert.throws(() => createLimiter(mockAdapter(), { backend: 'cluster' }), TypeError);
    assert.throws(() => createLimiter(mockAdapter(), { onConnectionError: 'open' }), TypeError);
  });
});

describe('connection errors: raise, fail open or fail closed, on a dead connection', async () => {
  const port = await freePort(); // nothing listens there
  const { createClient } = require('redis');
  const { Redis } = require('ioredis');
  const kinds = [
    // node-redis: a client that is not connected refuses every command.
    ['node-redis', () => ({ client: createClient({ url: `redis://127.0.0.1:${port}` }), close: async () => {} })],
    [
      'ioredis',
      () => {
        const client = new Redis(port, '127.0.0.1', { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
        client.on('error', () => {});
        return { client, close: async () => client.disconnect() };
      },
    ],
  ];
  for (const [name, open] of kinds) {
    test(`${name}: the default raises RLConnectionError; 'allow' and 'deny' answer a decision with the error`, async () => {
      const { client, close } = open();
      try {
        await assert.rejects(createLimiter(client).fixed('k', 5, '1m'), RLConnectionError);
        const open1 = await createLimiter(client, { onConnectionError: 'allow' }).fixed('k', 5, '1m');
        assert.deepEqual([open1.allowed, open1.limit, open1.remaining, open1.retryAfter], [true, 5, 5, 0]);
        assert.ok(open1.error instanceof RLConnectionError);
        const seen = [];
        const closed = createLimiter(client, {
          backend: 'module',
          onConnectionError: (err, command) => {
            seen.push([err.name, command]);
            return 'deny';
          },
        });
        const d = await closed.gcra('k', 5, 1, '1s');
        assert.deepEqual([d.allowed, d.retryAfter], [false, null]);
        assert.deepEqual(seen, [['RLConnectionError', 'RL.GCRA']]);
        const [p] = await closed.pipeline().all([['k', policies.fixed(3, '1s')]]).exec();
        assert.deepEqual([p.allowed, p.decisions.length], [false, 1]);
        // A release is not a decision: its connection error is always raised.
        await assert.rejects(closed.release('k', 'id'), RLConnectionError);
        // Fail open on a lease: fn runs, and no release is sent for a lease never taken.
        const openLimiter = createLimiter(client, { backend: 'module', onConnectionError: 'allow' });
        assert.equal(await openLimiter.withLease('k', 1, '1m', 'id', () => 7), 7);
      } finally {
        await close();
      }
    });
  }
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
