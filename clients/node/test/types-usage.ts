// Type-checked by types.test.js (tsc --noEmit): the shipped index.d.ts against real
// node-redis and ioredis clients. Never run.
import { createClient } from 'redis';
import { Redis } from 'ioredis';
import {
  createLimiter,
  policies,
  Decision,
  AllDecision,
  ThrottleDecision,
  RateLimitHeaders,
  RLError,
  RLArgumentError,
  RLLeaseRejectedError,
  RLTimeoutError,
  ms,
  GcraOptions,
  CostOptions,
  RLStore,
  fastifyStore,
} from '@rl/client';
import { rateLimit } from 'express-rate-limit';
import Fastify from 'fastify';
import fastifyRateLimit from '@fastify/rate-limit';

export async function usage(): Promise<void> {
  const nodeRedis = createClient({ url: 'redis://127.0.0.1:6379' });
  const io = new Redis('redis://127.0.0.1:6379');
  const rl = createLimiter(nodeRedis, { onConnectionError: 'allow', timeout: 50 });
  const backend: 'module' | 'library' = await rl.detect();
  void backend;
  const options: GcraOptions = { delay: ms(1500) };
  const amounts: CostOptions = { refund: 1 };
  void [options, amounts];
  const rl2 = createLimiter(io, { backend: 'library', onConnectionError: (err, command) => (command === 'RL.ACQUIRE' ? 'deny' : 'throw') });

  const d: Decision = await rl.gcra('k', 20, 100, '1m', { cost: 2, delay: '1500ms' });
  const allowed: boolean = d.allowed;
  const retry: number | null = d.retryAfter;
  const h: RateLimitHeaders = d.headers();
  const policy: string = h['RateLimit-Policy'];
  const tried: Decision = await rl.fixed('k', 100, '1d', { shadow: true, cost: 2 });
  const wouldReject: boolean = tried.shadow && !tried.allowed;
  const withTrial: AllDecision = await rl.all([
    ['{u}:a', policies.gcra(10, 1, '1s')],
    ['{u}:b', policies.fixed(100, '1d', { shadow: true })],
  ]);
  const memberShadow: boolean = withTrial.decisions[1].shadow && withTrial.policies[1].shadow;
  void [wouldReject, memberShadow];
  // @ts-expect-error shadow is a boolean
  await rl.gcra('k', 5, 1, '1s', { shadow: 1 });
  // @ts-expect-error RL.ACQUIRE takes no SHADOW
  await rl.acquire('k', 5, '1m', 'id', { shadow: true });
  const retryAfter: string | undefined = h['Retry-After'];
  void [allowed, retry, policy, retryAfter];

  await rl.fixed('k', 5, 60_000, { refund: 1 });
  await rl.sliding(Buffer.from('k'), 5, '1m', { cost: 0 });
  await rl.slidingCounter('k', 5n, '1m', { debit: 3 });
  await rl.bucket('k', '5', 1, '1s');
  const t: ThrottleDecision = await rl.throttle('k', 15, 30, '60', 1);
  const s: number | null = t.retryAfterSeconds;
  void s;
  const all: AllDecision = await rl2.all(
    [
      ['{u}:a', policies.fixed(5, '1s')],
      ['{u}:b', policies.gcra(5, 1, '1s', { delay: '3s' })],
      { key: '{u}:c', policy: policies.acquire(2, '1m', 'job') },
      ['{u}:d', policies.penalty(3, '1m', '1m', '1h')],
      ['{u}:e', policies.share('tenant', 1, 10, 1, '1s')],
    ],
    { cost: 0 },
  );
  const each: Decision[] = all.decisions;
  const fields: RateLimitHeaders = all.headers(['a', 'b', 'c', 'd', 'e']);
  void [each, fields];
  const released: boolean = await rl.release('k', 'id');
  void released;
  await rl.penalty('k', 3, '1m', '1m', '1h', { cost: 1 });
  await rl.share('k', 'tenant', 1, 10, 1, '1s', { refund: 1 });

  const n: number = await rl.withLease('k', 2, '30s', null, async (lease) => {
    const id: string | Buffer = lease.id;
    void id;
    return 1;
  });
  void n;
  const lease = await rl.lease('k', 2, '30s');
  await lease[Symbol.asyncDispose]();

  const [a, b, c] = await rl.pipeline().gcra('k', 5, 1, '1s').release('k', 'id').throttle('k', 1, 1, 1000).exec();
  if (!(a instanceof RLError)) {
    const x: number = a.remaining;
    void x;
  }
  if (typeof b === 'boolean') {
    const y: boolean = b;
    void y;
  }
  if (c instanceof ThrottleDecision) {
    const z: boolean = c.limited;
    void z;
  }

  try {
    await rl.fixed('k', 0, '1s');
  } catch (e) {
    if (e instanceof RLArgumentError) {
      const code: string | undefined = e.code;
      void code;
    }
    if (e instanceof RLTimeoutError) {
      const command: string | undefined = e.command;
      void command;
    }
    if (e instanceof RLLeaseRejectedError) {
      const wait: number | null = e.decision.retryAfter;
      void wait;
    }
  }

  // @ts-expect-error RL.SLIDING takes no DEBIT
  await rl.sliding('k', 5, '1m', { debit: 1 });
  // @ts-expect-error RL.PENALTY takes COST only
  await rl.penalty('k', 3, '1m', '1m', '1h', { refund: 1 });
  // @ts-expect-error DELAY is RL.GCRA's only
  await rl.bucket('k', 5, 1, '1s', { delay: 10 });
  // @ts-expect-error a key is a string or a Buffer
  await rl.fixed(42, 5, '1s');
  // @ts-expect-error an RL.ALL entry needs a policy
  await rl.all([['k', 5]]);
  // @ts-expect-error a duration is not a boolean
  await rl.fixed('k', 5, true);
  // @ts-expect-error not a client
  createLimiter({ get: () => 1 });
}

// The stores, against express-rate-limit's and @fastify/rate-limit's own types.
export async function stores(): Promise<void> {
  const io = new Redis('redis://127.0.0.1:6379');
  const store = new RLStore(io, { prefix: 'rl:login:', timeout: 50 });
  const limiter = rateLimit({ windowMs: 60_000, limit: 5, standardHeaders: 'draft-8', store });
  void limiter;
  const hits = await store.get('ada');
  const total: number | undefined = hits?.totalHits;
  const reset: Date = (await store.increment('ada')).resetTime;
  void [total, reset];
  const app = Fastify();
  await app.register(fastifyRateLimit, { max: 100, timeWindow: '1 minute', store: fastifyStore(createClient()) });
  // @ts-expect-error the prefix is a string
  new RLStore(io, { prefix: 1 });
}
