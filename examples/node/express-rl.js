// Express middleware on @rl/client: one RL.BUCKET call per request (the module, or RL's
// Functions library: found at the first call), 429 with Retry-After when rejected, and
// RateLimit-Policy / RateLimit / X-RateLimit-* on every response.
//
// Run (in your app): npm install express ioredis /path/to/rl/clients/node
//                    REDIS_URL=redis://127.0.0.1:6379 PORT=3000 node express-rl.js
// RL_PERIOD (1s): a burst of 5, then one more request per RL_PERIOD.
import express from 'express';
import { Redis } from 'ioredis';
import { createLimiter } from '@rl/client';

const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: 1 });
redis.on('error', (err) => console.error('redis:', err.message));
// Fail open: if Redis does not answer, let the request through ('deny' for a 429 instead).
const rl = createLimiter(redis, { onConnectionError: 'allow' });

// A burst of `capacity`, then `tokens` per `period`, per user (X-User, else the address).
const rateLimit = (capacity, tokens, period) => async (req, res, next) => {
  try {
    const d = await rl.bucket(`rl:api:${req.get('x-user') ?? req.ip}`, capacity, tokens, period);
    if (d.error) console.error('rate limiter unavailable, request let through:', d.error.message);
    res.set(d.headers());
    if (!d.allowed) return res.status(429).send('Too Many Requests\n');
    next();
  } catch (err) {
    next(err); // an RL error (bad argument, WRONGTYPE, ...): a 500, never silently allowed
  }
};

const app = express();
app.get('/', rateLimit(5, 1, process.env.RL_PERIOD ?? '1s'), (req, res) => res.send('Hello!\n'));
const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
