'use strict';
// A hit counter over RL.FIXED, for the stores of other rate-limit libraries
// (express-rate-limit, @fastify/rate-limit): those libraries compare the count with their
// own limit, so every hit must be counted, also the ones over that limit. RL.FIXED is given
// a limit no client reaches (10^15): each hit is then allowed and counted, atomically on
// the server, and the count is that limit minus `remaining`. The window is epoch
// aligned on the server's clock; `reset_after` is exactly when the count goes back to 0.

const { RateLimiter } = require('./limiter');
const { integer } = require('./args');
const { refuse } = require('./classify');

/**
 * The limit RL.FIXED is given: never reached, so no hit is refused. Not 2^53 - 1: node-redis
 * reads integers that close to 2^53 one off (its decoder's `n * 10 + byte` rounds).
 */
const COUNT_ALL = 10 ** 15;

class HitCounter {
  /**
   * @param client a node-redis or ioredis client (or cluster), or a RateLimiter
   * @param options createLimiter's `backend` and `timeout` (ignored with a RateLimiter)
   * @param owner the name errors are given under ('RLStore', ...)
   */
  constructor(client, options, owner) {
    this.owner = owner;
    if (options.onConnectionError !== undefined) {
      // The library's own option decides what a store error does (passOnStoreError,
      // skipOnError): a decision made up here would hide the error from it.
      throw refuse(owner, 'onConnectionError is not taken here: the rate-limit library decides what a store error does');
    }
    this.limiter = client instanceof RateLimiter ? client : new RateLimiter(client, { backend: options.backend, timeout: options.timeout });
  }

  /**
   * The window of a call, as RL reads it ("60000ms"), or an RLArgumentError. Whole ms
   * only (RL never rounds); RL.FIXED's own check refuses one above its longest window.
   */
  window(windowMs) {
    if (windowMs === undefined) throw refuse(this.owner, 'no window: init(options) with windowMs was not called');
    return `${integer(windowMs, this.owner, 'windowMs', 1, Number.MAX_SAFE_INTEGER)}ms`;
  }

  /** Counts one hit on `key`: { hits, resetMs } after it. */
  async hit(key, windowMs) {
    return this._read(await this.limiter.fixed(key, COUNT_ALL, this.window(windowMs)));
  }

  /** Takes one hit back (never below 0; a count back at 0 deletes the key). */
  async unhit(key, windowMs) {
    this._read(await this.limiter.fixed(key, COUNT_ALL, this.window(windowMs), { refund: 1 }));
  }

  /** The count and reset without counting (COST 0 writes nothing). */
  async peek(key, windowMs) {
    return this._read(await this.limiter.fixed(key, COUNT_ALL, this.window(windowMs), { cost: 0 }));
  }

  /** Forgets the key's hits: a refund of everything, which deletes the key. */
  async clear(key, windowMs) {
    this._read(await this.limiter.fixed(key, COUNT_ALL, this.window(windowMs), { refund: COUNT_ALL }));
  }

  _read(d) {
    // A limiter given with a fail mode answers a decision of its own: the error it carries
    // is the store's error.
    if (d.error !== undefined) throw d.error;
    return { hits: COUNT_ALL - d.remaining, resetMs: d.resetAfter };
  }
}

module.exports = { HitCounter, COUNT_ALL };
