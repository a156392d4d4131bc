'use strict';
// A three-node Redis Cluster of our own (the library on every primary; the module too
// when its path is known: RL_MODULE or target/release/librl.so), through ioredis's
// Cluster and node-redis's createCluster: calls routed by key, pipelines across slots,
// RL.ALL on one slot, leases.
const { describe, test, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { ROOT, haveRedisServer, until, unique } = require('./helpers');
const { createLimiter, policies, Decision, RLServerError, RLStore } = require('..');

const REDIS_SERVER = process.env.REDIS_SERVER || 'redis-server';
const REDIS_CLI = process.env.REDIS_CLI || 'redis-cli';
const LIBRARY = process.env.RL_LIBRARY || path.join(ROOT, 'functions', 'rl.lua');
const MODULE = process.env.RL_MODULE || path.join(ROOT, 'target', 'release', 'librl.so');

const haveCli = () => spawnSync(REDIS_CLI, ['--version']).status === 0;
const skip = !haveRedisServer() || !haveCli() ? 'redis-server and redis-cli are needed for a cluster' : !fs.existsSync(LIBRARY) && `${LIBRARY} is missing`;

const portFree = (port) =>
  new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });

// Three ports whose cluster bus ports (+10000) are free too.
async function clusterPorts() {
  const ports = [];
  for (let tries = 0; ports.length < 3 && tries < 200; tries++) {
    const port = 20000 + Math.floor(Math.random() * 30000);
    if (!ports.includes(port) && (await portFree(port)) && (await portFree(port + 10000))) ports.push(port);
  }
  if (ports.length < 3) throw new Error('no free ports for a cluster');
  return ports;
}

function cli(port, ...args) {
  const r = spawnSync(REDIS_CLI, ['-p', String(port), ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`redis-cli ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

async function startCluster(withModule) {
  const ports = await clusterPorts();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rl-node-cluster-'));
  const procs = ports.map((port) => {
    fs.mkdirSync(path.join(dir, String(port)));
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', path.join(dir, String(port)), '--save', '', '--appendonly', 'no', '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf'];
    if (withModule) args.push('--loadmodule', MODULE);
    return spawn(REDIS_SERVER, args, { stdio: 'ignore' });
  });
  const stop = async () => {
    for (const p of procs) if (p.exitCode === null) p.kill('SIGTERM');
    await until('the cluster to stop', 10000, () => procs.every((p) => p.exitCode !== null || p.signalCode !== null));
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await until('the cluster nodes', 10000, () => ports.every((p) => cli(p, 'ping').trim() === 'PONG'));
    cli(ports[0], '--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes');
    await until('cluster_state:ok', 30000, () => ports.every((p) => cli(p, 'cluster', 'info').includes('cluster_state:ok')));
    if (!withModule) {
      const code = fs.readFileSync(LIBRARY, 'utf8');
      for (const p of ports) spawnSync(REDIS_CLI, ['-p', String(p), '-x', 'FUNCTION', 'LOAD'], { input: code });
    }
  } catch (err) {
    await stop();
    throw err;
  }
  return { ports, stop };
}

const variants = [
  { backend: 'module', withModule: true, missing: !fs.existsSync(MODULE) && `${MODULE} is missing (set RL_MODULE, or make build)` },
  { backend: 'library', withModule: false, missing: false },
];

for (const { backend, withModule, missing } of variants) {
  describe(`a three-node cluster with the ${backend}`, { skip: skip || missing }, () => {
    let cluster;
    before(async () => {
      cluster = await startCluster(withModule);
    });
    after(async () => {
      if (cluster) await cluster.stop();
    });

    const clients = {
      ioredis: async (ports) => {
        const { Cluster } = require('ioredis');
        const c = new Cluster(ports.map((port) => ({ host: '127.0.0.1', port })));
        c.on('error', () => {});
        await until('ioredis cluster ready', 20000, () => c.status === 'ready');
        return { client: c, close: () => c.quit() };
      },
      'node-redis': async (ports) => {
        const { createCluster } = require('redis');
        const c = createCluster({ rootNodes: ports.map((port) => ({ url: `redis://127.0.0.1:${port}` })) });
        c.on('error', () => {});
        await c.connect();
        return { client: c, close: () => c.quit() };
      },
    };

    for (const [name, open] of Object.entries(clients)) {
      test(`${name}: calls on keys in every slot, a pipeline across slots, RL.ALL in one slot, a lease`, async () => {
        const { client, close } = await open(cluster.ports);
        try {
          const rl = createLimiter(client);
          assert.equal(await rl.backend(), backend);
          const base = unique(`cluster:${name}`);
          const keys = Array.from({ length: 12 }, (_, i) => `${base}:${i}`);
          for (const key of keys) {
            assert.equal((await rl.gcra(key, 3, 1, '1h')).remaining, 2);
          }
          const results = await keys.reduce((p, key) => p.gcra(key, 3, 1, '1h'), rl.pipeline()).exec();
          assert.deepEqual(results.map((d) => (d instanceof Decision ? d.remaining : d.message)), keys.map(() => 1));
          const tag = `{${base}}`;
          const all = await rl.all([
            [`${tag}:a`, policies.fixed(2, '3650d')],
            [`${tag}:b`, policies.bucket(5, 1, '1s')],
          ]);
          assert.deepEqual(all.decisions.map((d) => d.remaining), [1, 4]);
          await assert.rejects(
            rl.all([
              [`${base}:x`, policies.fixed(2, '1m')],
              [`${base}:y`, policies.fixed(2, '1m')],
            ]),
            (e) => e instanceof RLServerError && e.code === 'CROSSSLOT',
          );
          const held = await rl.withLease(`${base}:lease`, 1, '1m', 'job', async () => (await rl.acquire(`${base}:lease`, 1, '1m', 'other')).allowed);
          assert.equal(held, false);
          assert.equal((await rl.acquire(`${base}:lease`, 1, '1m', 'other')).allowed, true);
        } finally {
          await close();
        }
      });

      test(`${name}: express-rate-limit's RLStore on keys in every slot`, async () => {
        const { client, close } = await open(cluster.ports);
        try {
          const store = new RLStore(client, { timeout: 2000 });
          store.init({ windowMs: 3600000 });
          const keys = Array.from({ length: 12 }, (_, i) => `${unique(`store:${name}`)}:${i}`);
          for (const key of keys) await store.increment(key);
          assert.deepEqual((await Promise.all(keys.map((k) => store.increment(k)))).map((r) => r.totalHits), keys.map(() => 2));
          await store.decrement(keys[0]);
          await store.resetKey(keys[1]);
          assert.deepEqual((await Promise.all(keys.slice(0, 3).map((k) => store.get(k)))).map((r) => r && r.totalHits), [1, undefined, 2]);
        } finally {
          await close();
        }
      });
    }
  });
}
