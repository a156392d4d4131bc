// express-rate-limit with RL as its store: the library's own quick start, where one line
// changes (`store: new RLStore(redis)`). Every instance of the app, on any number of
// machines, shares one count per client in Redis, kept by RL: each hit one atomic
// RL.FIXED call (the module, or RL's Functions library: found at the first call), the
// window's end on the server's clock, which the RateLimit headers give to the second.
//
// Run (in your app): npm install express express-rate-limit ioredis /path/to/rl/clients/node
//                    REDIS_URL=redis://127.0.0.1:6379 PORT=3000 node express-rate-limit.js
// RL_LIMIT (100): requests per client per 15 minutes on /; /health is not limited.
import express from 'express';
import { rateLimit } from 'express-rate-limit';
import { Redis } from 'ioredis';
import { RLStore } from '@rl/client';

// No offline queue: a hit made while Redis is away is an error now, never counted later.
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { enableOfflineQueue: false });
redis.on('error', (err) => console.error('redis:', err.message));
await new Promise((resolve) => redis.once('ready', resolve));

const limiter = rateLimit({
  windowMs: 15 * 60 * 1000, // 15 minutes
  limit: Number(process.env.RL_LIMIT ?? 100), // per client (IP address) and window
  standardHeaders: 'draft-8', // RateLimit-Policy and RateLimit
  legacyHeaders: false, // no X-RateLimit-*
  store: new RLStore(redis), // the line that changes: RL keeps the count
  // passOnStoreError: true, // Redis out of reach: let requests through (fail open) instead of a 500
});

const app = express();
app.get('/health', (req, res) => res.send('ok\n')); // before the limiter: not limited
app.use(limiter);
app.get('/', (req, res) => res.send('Hello!\n'));
const server = app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});
