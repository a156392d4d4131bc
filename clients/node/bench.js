'use strict';
// Overhead of the typed API: N pipelined RL.GCRA calls through RateLimiter.pipeline()
// against the same N calls sent raw through the same client (an ioredis pipeline;
// node-redis commands issued in one tick, which it pipelines), rounds interleaved,
// medians compared. Prints one line per client, then the final line for the client
// with the lower ratio:
//   client-bench node raw_ops=<int> typed_ops=<int> ratio=<typed/raw>
// Run: node --expose-gc bench.js (bench.sh does).
// Env: RL_BENCH_URL (redis://127.0.0.1:6379), RL_BENCH_N (20000), RL_BENCH_ROUNDS (11).
const { createLimiter } = require('.');

const url = process.env.RL_BENCH_URL || 'redis://127.0.0.1:6379';
const N = Number(process.env.RL_BENCH_N || 20000);
const ROUNDS = Number(process.env.RL_BENCH_ROUNDS || 11);
const KEYS = Array.from({ length: 1000 }, (_, i) => `rl:bench:node:${i}`);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

// Each round starts from a collected heap (node --expose-gc), so that neither side pays
// for the other's garbage.
async function time(fn) {
  if (global.gc) global.gc();
  const t0 = process.hrtime.bigint();
  await fn();
  return N / (Number(process.hrtime.bigint() - t0) / 1e9);
}

async function bench(name, client, rawBatch) {
  const rl = createLimiter(client);
  const backend = await rl.backend();
  // The raw arguments the typed call sends, for this server's backend.
  const head = backend === 'module' ? ['RL.GCRA'] : ['FCALL', 'rl_gcra', '1'];
  const raw = () => {
    const commands = new Array(N);
    for (let i = 0; i < N; i++) commands[i] = [...head, KEYS[i % KEYS.length], '1000000', '1000000', '1s'];
    return rawBatch(commands);
  };
  const typed = async () => {
    const p = rl.pipeline();
    for (let i = 0; i < N; i++) p.gcra(KEYS[i % KEYS.length], 1000000, 1000000, '1s');
    const results = await p.exec();
    if (!results[N - 1].allowed) throw new Error('unexpected rejection');
  };
  for (let w = 0; w < 3; w++) {
    await raw(); // warm up both paths (the JIT, the server's keys)
    await typed();
  }
  const rawOps = [];
  const typedOps = [];
  for (let r = 0; r < ROUNDS; r++) {
    // Alternate which goes first, so neither always runs on a warmer server.
    if (r % 2 === 0) {
      rawOps.push(await time(raw));
      typedOps.push(await time(typed));
    } else {
      typedOps.push(await time(typed));
      rawOps.push(await time(raw));
    }
  }
  const result = { name, backend, raw: Math.round(median(rawOps)), typed: Math.round(median(typedOps)) };
  result.ratio = result.typed / result.raw;
  console.log(`client-bench-detail node ${name} (${backend}) raw_ops=${result.raw} typed_ops=${result.typed} ratio=${result.ratio.toFixed(3)}`);
  return result;
}

async function main() {
  const { Redis } = require('ioredis');
  const { createClient } = require('redis');
  const results = [];

  const io = new Redis(url);
  results.push(
    await bench('ioredis', io, async (commands) => {
      const p = io.pipeline();
      for (const args of commands) p.call(...args);
      await p.exec();
    }),
  );
  io.disconnect();

  const nr = createClient({ url });
  nr.on('error', () => {});
  await nr.connect();
  results.push(await bench('node-redis', nr, (commands) => Promise.all(commands.map((args) => nr.sendCommand(args)))));
  await nr.quit();

  const worst = results.reduce((a, b) => (b.ratio < a.ratio ? b : a));
  console.log(`client-bench node raw_ops=${worst.raw} typed_ops=${worst.typed} ratio=${worst.ratio.toFixed(3)}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
