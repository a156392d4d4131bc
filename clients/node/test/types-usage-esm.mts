// The ES module entry's types (index.d.mts), type-checked by types.test.js. Never run.
import rl, { createLimiter, RLStore, type Decision } from '@rl/client';
import { createClient } from 'redis';

export async function esm(): Promise<Decision> {
  const limiter = createLimiter(createClient());
  const same: typeof createLimiter = rl.createLimiter;
  void [same, new RLStore(createClient()), rl.fastifyStore];
  return limiter.fixed('k', 5, '1m');
}
