'use strict';
// A store for express-rate-limit (v7 and v8) over RL:
//
//   const { RLStore } = require('@rl/client');
//   app.use(rateLimit({ windowMs: 60_000, limit: 100, store: new RLStore(redis) }));
//
// Each hit is one RL.FIXED call (lib/hits.js): counted atomically on the server, in a
// window aligned to the epoch on the server's clock, with the exact time the count goes
// back to 0 as resetTime, which express-rate-limit turns into its RateLimit headers.

const { HitCounter } = require('./hits');
const { refuse } = require('./classify');

const DEFAULT_PREFIX = 'rl:express:';

class RLStore {
  /**
   * @param client a node-redis or ioredis client (or cluster), or a RateLimiter
   * @param options prefix: put before every key (default 'rl:express:'; one per rate
   *   limiter); backend, timeout: as createLimiter's
   */
  constructor(client, options = {}) {
    if (options === null || typeof options !== 'object') throw refuse('RLStore', 'options must be an object');
    const { prefix = DEFAULT_PREFIX, ...limiterOptions } = options;
    if (typeof prefix !== 'string') throw refuse('RLStore', 'prefix must be a string');
    /** Put before every key; express-rate-limit tells limiters apart by it. */
    this.prefix = prefix;
    /** The hits are on the server: every instance with this prefix shares them. */
    this.localKeys = false;
    /** The window (ms), from express-rate-limit's options by init(). */
    this.windowMs = undefined;
    this._counter = new HitCounter(client, limiterOptions, 'RLStore');
  }

  /** Called by express-rate-limit with its options: takes windowMs (refused here if RL cannot have it). */
  init(options) {
    this.windowMs = options.windowMs;
    // express-rate-limit only logs an error thrown here; each call throws it again.
    this._counter.window(this.windowMs);
  }

  /** Counts a hit, also over the limit: { totalHits, resetTime }. */
  async increment(key) {
    const { hits, resetMs } = await this._counter.hit(this.prefix + key, this.windowMs);
    return { totalHits: hits, resetTime: new Date(Date.now() + resetMs) };
  }

  /** Takes a hit back (skipFailedRequests, skipSuccessfulRequests); never below 0. */
  async decrement(key) {
    await this._counter.unhit(this.prefix + key, this.windowMs);
  }

  /** The hits and reset time without counting; undefined when there are none. */
  async get(key) {
    const { hits, resetMs } = await this._counter.peek(this.prefix + key, this.windowMs);
    return hits === 0 ? undefined : { totalHits: hits, resetTime: new Date(Date.now() + resetMs) };
  }

  /** Forgets the key's hits. */
  async resetKey(key) {
    await this._counter.clear(this.prefix + key, this.windowMs);
  }
}

module.exports = { RLStore };
