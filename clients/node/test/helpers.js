'use strict';
// Shared by the tests: the harness's servers, a client of each kind, a server of our own.
const { spawn, spawnSync } = require('node:child_process');
const { randomUUID } = require('node:crypto');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '..', '..', '..');

// scripts/clients.sh starts a server with the module and one with only the library.
const BACKENDS = [
  { backend: 'module', url: process.env.RL_TEST_MODULE_URL },
  { backend: 'library', url: process.env.RL_TEST_LIBRARY_URL },
];
const MISSING_URLS = BACKENDS.filter((b) => !b.url).map((b) => (b.backend === 'module' ? 'RL_TEST_MODULE_URL' : 'RL_TEST_LIBRARY_URL'));
const SKIP_SERVERS = MISSING_URLS.length
  ? `${MISSING_URLS.join(' and ')} not set: run scripts/clients.sh node (it starts the servers)`
  : false;

// node-redis and ioredis clients of one URL, each with a close().
async function nodeRedisClient(url) {
  const { createClient } = require('redis');
  const client = createClient({ url });
  client.on('error', () => {});
  await client.connect();
  return { client, close: () => client.quit() };
}

async function ioredisClient(url) {
  const { Redis } = require('ioredis');
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  await client.connect();
  return { client, close: () => client.quit() };
}

const CLIENTS = [
  { name: 'node-redis', open: nodeRedisClient },
  { name: 'ioredis', open: ioredisClient },
];

// A raw command through either client, for checks beside the typed API.
function raw(client, ...args) {
  const strs = args.map(String);
  if (typeof client.call === 'function') return client.call(...strs);
  return client.sendCommand(strs);
}

const unique = (label) => `rltest:${label}:${randomUUID().slice(0, 8)}`;

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// Waits for check() to answer true, by a deadline that also bounds a check that never settles.
async function until(what, deadlineMs, check) {
  const end = Date.now() + deadlineMs;
  let last;
  while (Date.now() < end) {
    let timer;
    const late = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error('the check did not settle')), Math.max(end - Date.now(), 1));
    });
    try {
      if (await Promise.race([check(), late])) return;
    } catch (err) {
      last = err;
    } finally {
      clearTimeout(timer);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what}: not within ${deadlineMs} ms${last ? ` (${last.message})` : ''}`);
}

const REDIS_SERVER = process.env.REDIS_SERVER || 'redis-server';
const haveRedisServer = () => spawnSync(REDIS_SERVER, ['--version']).status === 0;

// A redis-server of our own (no module, no library unless `args` load one) on `port`
// (a free one by default), stopped by stop() or killed by kill().
async function startServer(args = [], port = undefined) {
  if (port === undefined) port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rl-node-'));
  const proc = spawn(
    REDIS_SERVER,
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no', ...args],
    { stdio: 'ignore' },
  );
  let exited = false;
  proc.on('exit', () => {
    exited = true;
  });
  const url = `redis://127.0.0.1:${port}`;
  await until(`redis-server on ${port}`, 10000, async () => {
    if (exited) throw new Error('redis-server exited');
    return new Promise((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.write('PING\r\n');
      });
      s.on('data', (d) => {
        s.destroy();
        resolve(d.toString().startsWith('+PONG'));
      });
      s.on('error', () => resolve(false));
    });
  });
  const gone = () => until('redis-server to stop', 10000, () => exited);
  return {
    url,
    port,
    kill: async () => {
      proc.kill('SIGKILL');
      await gone();
      fs.rmSync(dir, { recursive: true, force: true });
    },
    stop: async () => {
      if (!exited) {
        proc.kill('SIGTERM');
        await gone();
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

// ---------------------------------------------------------------------------
// Adapters without a server.

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
      let errors = null;
      for (const args of commands) {
        try {
          replies.push(await adapter.call(args));
        } catch (error) {
          (errors === null ? (errors = []) : errors)[replies.length] = error;
          replies.push(undefined);
        }
      }
      return { replies, errors };
    },
  };
  return adapter;
}

// An adapter whose server never answers (a connection error after `after` ms, or never).
function deadAdapter(after = 0) {
  const fail = () =>
    after === null ? new Promise(() => {}) : new Promise((_, reject) => setTimeout(() => reject(new Error('connect ECONNREFUSED')), after));
  return { kind: 'dead', call: fail, batch: fail };
}

// ---------------------------------------------------------------------------
// clients/headers.json: its cases, and its calls made through the typed API.

const HEADERS = JSON.parse(fs.readFileSync(path.join(ROOT, 'clients', 'headers.json'), 'utf8'));
const TABLE = JSON.parse(fs.readFileSync(path.join(ROOT, 'commands.json'), 'utf8'));

// The command of a headers.json call name ("gcra", "slidingCounter", "throttle", "all").
function commandOf(name) {
  const { COMMANDS } = require('../lib/commands.generated');
  const found = Object.values(COMMANDS).find((c) => c.method === name);
  if (!found) throw new Error(`headers.json names a call '${name}' the client has no method for`);
  return TABLE.commands.find((c) => c.name === found.name);
}

// A call's arguments after the key: headers.json gives durations in ms.
function argsOf(command, values) {
  const kinds = command.arguments.filter((a) => a.type !== 'key').map((a) => a.type);
  return values.map((v, i) => (kinds[i] === 'duration' ? `${v}ms` : v));
}

// A call (or an RL.ALL policy) written ["shadow", name, ...values] is made with { shadow: true }.
function shadowed(call) {
  const shadow = call[0] === 'shadow';
  const [name, ...values] = shadow ? call.slice(1) : call;
  const args = argsOf(commandOf(name), values);
  return { name, args: shadow ? [...args, { shadow: true }] : args };
}

/** Makes headers.json's `call` on `target` (a limiter or pipeline), on key `key`. */
function callFor(target, call, key) {
  const { policies } = require('..');
  if (call[0] === 'all') {
    const entries = call.slice(1).map((policy, i) => {
      const { name, args } = shadowed(policy);
      return [`{${key}}:${i}`, policies[name](...args)];
    });
    return target.all(entries);
  }
  const { name, args } = shadowed(call);
  return target[name](key, ...args);
}

/** Every structured field of `headers`, parsed by a real parser (structured-headers): throws when one is invalid. */
function parseFields(headers) {
  const sf = require('structured-headers');
  return { policy: sf.parseList(headers['RateLimit-Policy']), limit: sf.parseList(headers.RateLimit) };
}

// The fields a headers.json case lists or leaves out: a field it does not list must be absent.
const CASE_FIELDS = ['RateLimit-Policy', 'RateLimit', 'Retry-After'];

/**
 * Checks decision `d` of headers.json case `c` (a failures or shadow case): its fields
 * exactly ({} = none at all), each parsed; its allowed and members when the case gives
 * them; its shadow flag and each RL.ALL member's, from the call's "shadow" marks.
 */
function checkCase(d, c) {
  const assert = require('node:assert/strict');
  const what = JSON.stringify(c.call);
  const h = d.headers();
  if (Object.keys(c.fields).length === 0) {
    assert.deepEqual(h, {}, what);
  } else {
    for (const name of new Set([...CASE_FIELDS, ...Object.keys(c.fields)])) assert.equal(h[name], c.fields[name], `${what} ${name}`);
    parseFields(h);
  }
  if (c.allowed !== undefined) assert.equal(d.allowed, c.allowed, `${what} allowed`);
  if (c.call[0] !== 'all') {
    assert.equal(d.shadow, c.call[0] === 'shadow', `${what} shadow`);
    return;
  }
  assert.equal(d.shadow, false, `${what}: the combined decision is the enforced policies'`);
  const marks = c.call.slice(1).map((p) => ({ shadow: p[0] === 'shadow' }));
  assert.deepEqual(d.decisions.map((m) => ({ shadow: m.shadow })), marks, `${what} members' shadow`);
  if (c.members) assert.deepEqual(d.decisions.map((m) => ({ allowed: m.allowed, shadow: m.shadow })), c.members, `${what} members`);
}

module.exports = {
  HEADERS,
  TABLE,
  callFor,
  parseFields,
  checkCase,
  mockAdapter,
  deadAdapter,
  ROOT,
  BACKENDS,
  SKIP_SERVERS,
  CLIENTS,
  raw,
  unique,
  freePort,
  until,
  haveRedisServer,
  startServer,
};
