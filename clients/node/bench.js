'use strict';
// Overhead of the typed API: N pipelined RL.GCRA calls through RateLimiter.pipeline()
// against the same N calls sent raw through the same client (an ioredis pipeline;
// node-redis commands issued in one tick, which it pipelines).
//
// Each measurement runs in a process of its own (warm-up rounds, then timed rounds, the
// median taken), so that neither side pays for the other's garbage; raw and typed
// processes alternate, PAIRS times per client. Prints one line per client, then the
// final line for the client with the lower ratio (the pair with the median typed / raw):
//   client-bench node raw_ops=<int> typed_ops=<int> ratio=<typed/raw>
// Env: RL_BENCH_URL (redis://127.0.0.1:6379), RL_BENCH_N (20000), RL_BENCH_ROUNDS (5
// timed rounds per process), RL_BENCH_PAIRS (5).
const { execFileSync } = require('node:child_process');

const url = process.env.RL_BENCH_URL || 'redis://127.0.0.1:6379';
const N = Number(process.env.RL_BENCH_N || 20000);
const ROUNDS = Number(process.env.RL_BENCH_ROUNDS || 5);
const PAIRS = Number(process.env.RL_BENCH_PAIRS || 5);
const WARMUP = 3;
const KEYS = Array.from({ length: 1000 }, (_, i) => `rl:bench:node:${i}`);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// One process: `kind` (raw or typed) through `name` (ioredis or node-redis); prints
// "<backend> <ops per second>".
async function worker(name, kind) {
  const { createLimiter } = require('.');
  let client;
  let rawBatch;
  let close;
  if (name === 'ioredis') {
    const { Redis } = require('ioredis');
    client = new Redis(url);
    rawBatch = async (commands) => {
      const p = client.pipeline();
      for (const args of commands) p.call(...args);
      await p.exec();
    };
    close = () => client.disconnect();
  } else {
    const { createClient } = require('redis');
    client = createClient({ url });
    await client.connect();
    rawBatch = (commands) => Promise.all(commands.map((args) => client.sendCommand(args)));
    close = () => client.quit();
  }
  // A pipeline of N calls has one deadline: long enough for all of them.
  const rl = createLimiter(client, { timeout: 60000 });
  const backend = await rl.backend();
  // The raw arguments the typed call sends, for this server's backend.
  const lib = backend === 'library';
  const run =
    kind === 'raw'
      ? () => {
          const commands = new Array(N);
          for (let i = 0; i < N; i++) {
            const key = KEYS[i % KEYS.length];
            commands[i] = lib ? ['FCALL', 'rl_gcra', '1', key, '1000000', '1000000', '1s'] : ['RL.GCRA', key, '1000000', '1000000', '1s'];
          }
          return rawBatch(commands);
        }
      : async () => {
          const p = rl.pipeline();
          for (let i = 0; i < N; i++) p.gcra(KEYS[i % KEYS.length], 1000000, 1000000, '1s');
          const results = await p.exec();
          if (!results[N - 1].allowed) throw new Error('unexpected rejection');
        };
  for (let w = 0; w < WARMUP; w++) await run();
  const ops = [];
  const cpu = [];
  for (let r = 0; r < ROUNDS; r++) {
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    await run();
    ops.push(N / (Number(process.hrtime.bigint() - t0) / 1e9));
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / N);
  }
  await close();
  console.log(`${backend} ${Math.round(median(ops))} ${median(cpu).toFixed(3)}`);
}

function measure(name, kind) {
  const out = execFileSync(process.execPath, [__filename, name, kind], { env: process.env, encoding: 'utf8' }).trim().split(/\s+/);
  return { backend: out[0], ops: Number(out[1]), cpu: Number(out[2]) };
}

function main() {
  const results = [];
  for (const name of ['ioredis', 'node-redis']) {
    const raw = [];
    const typed = [];
    const rawCpu = [];
    const typedCpu = [];
    let backend;
    for (let p = 0; p < PAIRS; p++) {
      // Alternate which goes first, so neither always runs on a warmer server.
      const order = p % 2 ? ['typed', 'raw'] : ['raw', 'typed'];
      for (const kind of order) {
        const m = measure(name, kind);
        backend = m.backend;
        (kind === 'raw' ? raw : typed).push(m.ops);
        (kind === 'raw' ? rawCpu : typedCpu).push(m.cpu);
      }
    }
    // The pair with the median typed / raw (alternating processes, so a busy moment of
    // the machine slows both of a pair alike): its own raw and typed ops, and their ratio,
    // typed / raw. The medians of all raw and all typed rounds are in the detail line.
    const byRatio = raw.map((r, i) => [typed[i] / r, i]).sort((a, b) => a[0] - b[0]);
    const mid = byRatio[(byRatio.length - 1) >> 1][1];
    const result = { name, raw: Math.round(raw[mid]), typed: Math.round(typed[mid]) };
    result.ratio = result.typed / result.raw;
    // The client's own CPU time per call too: steadier than throughput on a busy machine.
    const cpuRaw = median(rawCpu);
    const cpuTyped = median(typedCpu);
    console.log(
      `client-bench-detail node ${name} (${backend}) raw_ops=${result.raw} typed_ops=${result.typed} ratio=${result.ratio.toFixed(3)}` +
        ` medians raw=${Math.round(median(raw))} typed=${Math.round(median(typed))}` +
        ` cpu_us_per_call raw=${cpuRaw.toFixed(2)} typed=${cpuTyped.toFixed(2)}`,
    );
    results.push(result);
  }
  const worst = results.reduce((a, b) => (b.ratio < a.ratio ? b : a));
  console.log(`client-bench node raw_ops=${worst.raw} typed_ops=${worst.typed} ratio=${worst.ratio.toFixed(3)}`);
}

if (process.argv.length > 2) {
  worker(process.argv[2], process.argv[3]).catch((err) => {
    console.error(err);
    process.exit(1);
  });
} else {
  try {
    main();
  } catch (err) {
    console.error(err.message);
    process.exit(1);
  }
}
