'use strict';
// Staying up when Redis is slow or gone (both off unless configured): a cache of blocked
// keys, which rejects locally a call the server has just rejected until its retry_after,
// and a fallback limiter, an in-process GCRA at the call's limit / instances that decides
// while the server cannot be reached. No I/O here: the limiter asks before a call and
// tells after it.

const { Decision } = require('./decisions');
const { PLAIN_RATES } = require('./commands.generated');

// The commands both apply to, the command table's plain rates: one key, one rate (limit
// per window) and an exact retry_after. Other commands, pipelines and shadow calls go to
// the server as always (the fail mode applies to them).
const COVERED = PLAIN_RATES;
// The most keys the fallback limiter keeps (the least recently used are dropped).
const FALLBACK_KEYS = 10000;
const AMOUNTS = new Set(['COST', 'REFUND', 'DEBIT']);
const EPS = 1e-6;

const ceilMs = (ms) => Math.max(0, Math.ceil(ms - EPS));

// A Map used as an LRU: `key` moved last with `value`, the oldest dropped past `size`.
function remember(map, key, value, size) {
  map.delete(key);
  map.set(key, value);
  if (map.size > size) map.delete(map.keys().next().value);
}

class Survival {
  /** cacheSize, fallbackInstances: counts (0: off); cacheMax, probeEvery: ms. */
  constructor(cacheSize, cacheMax, instances, probeEvery) {
    this.cacheSize = cacheSize;
    this.cacheMax = cacheMax;
    this.instances = instances;
    this.probeEvery = probeEvery;
    // ident -> { until, retryAt (null: never), resetAt, amount, limit }
    this.blocked = new Map();
    // ident -> the fallback GCRA's theoretical arrival time (ms)
    this.tats = new Map();
    // The connection error the server last failed with; null while it answers.
    this.down = null;
    this.downUntil = 0;
  }

  /**
   * A covered call's ticket: its command, key and arguments without the amount (what
   * the cache and the fallback key on), the amount's word and the amount; null for a
   * command not covered or a call with DELAY.
   */
  ticket(argv, command) {
    if (!COVERED.has(command.name)) return null;
    const from = argv[0] === 'FCALL' ? 3 : 1;
    let kind = 'COST';
    let amount = 1;
    let ident = command.name;
    for (let i = from; i < argv.length; i++) {
      const word = argv[i];
      if (word === 'DELAY') return null;
      if (AMOUNTS.has(word) && i + 1 < argv.length) {
        kind = word;
        amount = Number(argv[++i]);
        continue;
      }
      ident += '\u0000' + (Buffer.isBuffer(word) ? word.toString('latin1') : String(word));
    }
    return { ident, kind, amount };
  }

  /** A decision made here (the fallback's while down and no probe is due; a cached rejection), or null. */
  before(t, limit, window) {
    const now = performance.now();
    if (this.down !== null && this.instances > 0) {
      if (now < this.downUntil) return this._fallback(t, limit, window, now, this.down);
      this.downUntil = now + this.probeEvery; // this call probes; the calls meanwhile stay local
    }
    if (this.cacheSize === 0) return null;
    if (t.kind !== 'COST' || t.amount === 0) {
      // COST 0, REFUND and DEBIT go to the server and end the entry.
      this.blocked.delete(t.ident);
      return null;
    }
    const e = this.blocked.get(t.ident);
    if (e === undefined) return null;
    if (now >= e.until) {
      this.blocked.delete(t.ident);
      return null;
    }
    if (t.amount < e.amount) return null;
    const d = new Decision([0, e.limit, 0, e.retryAt === null ? -1 : ceilMs(e.retryAt - now), ceilMs(e.resetAt - now)], window);
    d.cached = true;
    return d;
  }

  /** The server answered (an error reply too): calls go to it again. */
  up() {
    this.down = null;
  }

  /** The server's decision: the server is up; a rejection is cached. */
  answered(t, d) {
    this.up();
    if (this.cacheSize > 0 && !d.allowed && t.kind === 'COST' && t.amount > 0) {
      const now = performance.now();
      const retry = d.retryAfter;
      const hold = retry === null ? this.cacheMax : Math.min(retry, this.cacheMax);
      if (hold > 0) {
        const entry = { until: now + hold, retryAt: retry === null ? null : now + retry, resetAt: now + d.resetAfter, amount: t.amount, limit: d.limit };
        remember(this.blocked, t.ident, entry, this.cacheSize);
      }
    }
    return d;
  }

  /** The fallback's decision for a call the server did not answer, or null without one. */
  failed(t, limit, window, error) {
    if (this.instances === 0) return null;
    const now = performance.now();
    this.down = error;
    this.downUntil = now + this.probeEvery;
    return this._fallback(t, limit, window, now, error);
  }

  // GCRA at this instance's share: n = limit / instances units per window, bursts up to n.
  _fallback(t, limit, window, now, error) {
    const n = Math.max(1, Math.floor(Number(limit) / this.instances));
    const step = window / n;
    let tat = Math.max(this.tats.get(t.ident) ?? now, now);
    let allowed = true;
    if (t.kind === 'REFUND') tat = Math.max(now, tat - t.amount * step);
    else if (t.kind === 'DEBIT') tat += t.amount * step;
    else if (tat + t.amount * step - now <= window + EPS) tat += t.amount * step;
    else allowed = false;
    remember(this.tats, t.ident, tat, FALLBACK_KEYS);
    const remaining = Math.min(n, Math.max(0, Math.floor((window - (tat - now)) / step + EPS)));
    let retry = 0;
    if (!allowed) retry = t.amount > n ? -1 : ceilMs(tat + t.amount * step - window - now);
    const d = new Decision([allowed ? 1 : 0, n, remaining, retry, ceilMs(tat - now)], window);
    d.error = error;
    return d;
  }
}

module.exports = { Survival };
