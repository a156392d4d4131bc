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

async function until(what, deadlineMs, check) {
  const end = Date.now() + deadlineMs;
  let last;
  while (Date.now() < end) {
    try {
      if (await check()) return;
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${what}: not within ${deadlineMs} ms${last ? ` (${last.message})` : ''}`);
}

const REDIS_SERVER = process.env.REDIS_SERVER || 'redis-server';
const haveRedisServer = () => spawnSync(REDIS_SERVER, ['--version']).status === 0;

// A redis-server of our own (no module, no library), stopped by stop().
async function startServer() {
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rl-node-'));
  const proc = spawn(
    REDIS_SERVER,
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'],
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
  return {
    url,
    port,
    stop: async () => {
      if (!exited) {
        proc.kill('SIGTERM');
        await until('redis-server to stop', 10000, () => exited);
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

module.exports = {
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
