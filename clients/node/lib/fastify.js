'use strict';
// A store for @fastify/rate-limit (v10 and v11) over RL. The plugin builds the store
// itself (`new Store(options)`), so this returns a class bound to the client:
//
//   await fastify.register(rateLimit, { max: 100, timeWindow: '1 minute', store: fastifyStore(redis) });
//
// Each hit is one RL.FIXED call (lib/hits.js), as for express-rate-limit's RLStore.

const { HitCounter } = require('./hits');
const { refuse } = require('./classify');

const DEFAULT_PREFIX = 'rl:fastify:';

/**
 * A @fastify/rate-limit store class over `client` (a node-redis or ioredis client or
 * cluster, or a RateLimiter). options: prefix (default 'rl:fastify:'); backend, timeout.
 */
function fastifyStore(client, options = {}) {
  if (options === null || typeof options !== 'object') throw refuse('fastifyStore', 'options must be an object');
  const { prefix = DEFAULT_PREFIX, ...limiterOptions } = options;
  if (typeof prefix !== 'string') throw refuse('fastifyStore', 'prefix must be a string');
  const counter = new HitCounter(client, limiterOptions, 'fastifyStore');
  // node-style callbacks, as the plugin calls its stores.
  const answer = (work, cb) =>
    work.then(
      ({ hits, resetMs }) => cb(null, { current: hits, ttl: resetMs }),
      (err) => cb(err),
    );

  return class RLFastifyStore {
    /** `params`: the plugin's options (global, or a route's for child()); `keyPrefix`: before every key. */
    constructor(params = {}, keyPrefix = prefix) {
      // Both move the key's expiry past its window: a fixed window on RL cannot.
      for (const option of ['continueExceeding', 'exponentialBackoff']) {
        if (params[option]) throw refuse('fastifyStore', `${option} is not supported: RL's fixed window ends when its window ends`);
      }
      this.prefix = keyPrefix;
    }
    /** Counts a hit, also over the limit: { current, ttl } (ttl: ms until the count is back to 0). */
    incr(key, cb, timeWindow) {
      answer(counter.hit(this.prefix + key, timeWindow), cb);
    }
    /** The same without counting ({ increment: false }). */
    read(key, cb, timeWindow) {
      answer(counter.peek(this.prefix + key, timeWindow), cb);
    }
    /** A route's own store: its own keys, as the plugin's Redis store does. */
    child(routeOptions) {
      return new RLFastifyStore(routeOptions, `${this.prefix}${routeOptions.routeInfo.method}${routeOptions.routeInfo.url}-`);
    }
  };
}

module.exports = { fastifyStore };
