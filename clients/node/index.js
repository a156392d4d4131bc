'use strict';
// @rl/client: typed calls to RL (the Redis rate-limit module, or its Functions library)
// through the application's own node-redis (v4+) or ioredis (v5+) client.
//
//   const rl = createLimiter(redis);            // node-redis client/cluster or ioredis
//   const d = await rl.gcra('rl:api:ada', 20, 100, '1m');
//   if (!d.allowed) { res.set(d.headers()); return res.sendStatus(429); }
//
// Which backend the server has (the module's RL.* commands, or `FCALL rl_*` of the
// library) is learnt by the first call and cached. Nothing here opens a connection.

const { randomUUID } = require('node:crypto');

const VERSION = '0.2.0';

// ---------------------------------------------------------------------------
// Errors

/** Every error this package raises. `code` is the server's code word when it has one. */
class RLError extends Error {
  constructor(message, options = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.code = options.code;
    this.command = options.command;
  }
}

/** An error reply from the server (its code word is `code`: ERR, WRONGTYPE, OOM, NOPERM, ...). */
class RLServerError extends RLError {}
/** ERR: a bad argument, option or arity, or a key RL did not write. Nothing was changed. */
class RLArgumentError extends RLServerError {}
/** WRONGTYPE: the key holds another Redis type. Nothing was changed. */
class RLWrongTypeError extends RLServerError {}
/** OOM: the server is at maxmemory and refuses the write. */
class RLOutOfMemoryError extends RLServerError {}
/** Neither the RL module nor the RL Functions library is loaded on the server. */
class RLNotLoadedError extends RLError {}
/** The backend has no such command (CL.THROTTLE on the library; a command newer than the server). */
class RLUnsupportedError extends RLError {}
/** The call did not get a reply: connection refused, closed, timed out. */
class RLConnectionError extends RLError {}
/** withLease(): the lease was not granted; `decision` says when to retry. */
class RLLeaseRejectedError extends RLError {
  constructor(decision, key) {
    super(
      `lease on '${String(key)}' not granted: ${decision.limit} held` +
        (decision.retryAfter === null ? '' : `; retry in ${decision.retryAfter} ms`),
      { command: 'RL.ACQUIRE' },
    );
    this.decision = decision;
  }
}

// Commands added after the first release: an older RL answers "unknown command" for them
// although it is loaded.
const NEWER_COMMANDS = new Set(['RL.SHARE']);

const NOT_LOADED_HELP =
  'RL is not loaded on this server: load the module (redis-server --loadmodule /path/to/librl.so, ' +
  'or MODULE LOAD /path/to/librl.so) or the Functions library (FUNCTION LOAD with the text of ' +
  "functions/rl.lua, e.g. `make load-library`); or force one with createLimiter(client, { backend: 'module' | 'library' })";

// A reply error of node-redis (ErrorReply and its subclasses) or ioredis (ReplyError),
// told apart from connection failures without importing either package.
function isReplyError(err) {
  if (err === null || typeof err !== 'object') return false;
  for (let p = Object.getPrototypeOf(err); p && p !== Error.prototype; p = Object.getPrototypeOf(p)) {
    const name = p.constructor && p.constructor.name;
    if (name === 'ErrorReply' || name === 'ReplyError' || name === 'SimpleError' || name === 'BlobError') {
      return true;
    }
  }
  return false;
}

function toRLError(err, command) {
  if (err instanceof RLError) return err;
  const message = err && err.message !== undefined ? String(err.message) : String(err);
  // A programming error (a bad argument type, ...) is not a connection failure: as is.
  if (err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError) return err;
  if (!isReplyError(err)) {
    return new RLConnectionError(`${command}: no reply from Redis: ${message}`, { cause: err, command });
  }
  const code = message.split(' ', 1)[0];
  const opts = { cause: err, code, command };
  if (/^ERR unknown command 'RL\.|^ERR unknown command `RL\.|^ERR Function not found/i.test(message)) {
    if (NEWER_COMMANDS.has(command)) {
      return new RLUnsupportedError(`${command}: ${message}: this server's RL is older than ${command}; upgrade the module or the library`, opts);
    }
    return new RLNotLoadedError(`${command}: ${message}. ${NOT_LOADED_HELP}`, opts);
  }
  switch (code) {
    case 'ERR':
      return new RLArgumentError(message, opts);
    case 'WRONGTYPE':
      return new RLWrongTypeError(message, opts);
    case 'OOM':
      return new RLOutOfMemoryError(message, opts);
    default:
      return new RLServerError(message, opts);
  }
}

// ---------------------------------------------------------------------------
// Adapters: one per client library; each sends argument arrays through the user's client.

// batch(commands) resolves to { replies, errors }: replies[i] is command i's reply, and
// errors, when not null, holds at i the error command i got instead.

class IORedisAdapter {
  constructor(client) {
    this.client = client;
    this.cluster = client.isCluster === true;
    this.kind = this.cluster ? 'ioredis-cluster' : 'ioredis';
  }
  call(args) {
    return this.client.call(...args);
  }
  // One pipeline. A cluster's pipeline must stay in one slot, so there each call goes
  // on its own (ioredis still writes them together).
  async batch(commands) {
    if (this.cluster) return settle(commands.map((args) => this.client.call(...args)));
    const pipeline = this.client.pipeline();
    for (const args of commands) pipeline.call(...args);
    const pairs = await pipeline.exec();
    const replies = new Array(pairs.length);
    let errors = null;
    for (let i = 0; i < pairs.length; i++) {
      const [error, reply] = pairs[i];
      if (error) (errors === null ? (errors = new Array(pairs.length)) : errors)[i] = error;
      else replies[i] = reply;
    }
    return { replies, errors };
  }
}

// node-redis sends every command issued in one tick in one write (auto-pipelining):
// a batch is those commands issued together.
class NodeRedisAdapter {
  constructor(client) {
    this.client = client;
    this.kind = 'node-redis';
  }
  call(args) {
    return this.client.sendCommand(args);
  }
  batch(commands) {
    const promises = new Array(commands.length);
    for (let i = 0; i < commands.length; i++) promises[i] = this.client.sendCommand(commands[i]);
    return settle(promises);
  }
}

class NodeRedisClusterAdapter {
  constructor(client) {
    this.client = client;
    this.kind = 'node-redis-cluster';
  }
  call(args) {
    return this.client.sendCommand(firstKey(args), false, args);
  }
  batch(commands) {
    return settle(commands.map((args) => this.client.sendCommand(firstKey(args), false, args)));
  }
}

// { replies, errors } of promises: all of them at once, and only when one fails, each.
function settle(promises) {
  return Promise.all(promises).then(
    (replies) => ({ replies, errors: null }),
    () =>
      Promise.allSettled(promises).then((outcomes) => {
        const replies = new Array(outcomes.length);
        const errors = new Array(outcomes.length);
        for (let i = 0; i < outcomes.length; i++) {
          if (outcomes[i].status === 'fulfilled') replies[i] = outcomes[i].value;
          else errors[i] = outcomes[i].reason;
        }
        return { replies, errors };
      }),
  );
}

// The key that routes a call on a cluster: RL.* key ..., FCALL fn numkeys key ...
function firstKey(args) {
  const name = String(args[0]).toUpperCase();
  if (name === 'FCALL') return args[3];
  if (name === 'RL.ALL') return args[2];
  if (name.startsWith('RL.') || name.startsWith('CL.')) return args[1];
  return undefined;
}

/** The adapter for a node-redis client or cluster, or an ioredis client or cluster. */
function adapterFor(client) {
  if (client && typeof client.call === 'function' && typeof client.batch === 'function') {
    return client; // already an adapter: call(args) -> reply, batch(commands) -> { replies, errors }
  }
  if (client && typeof client.call === 'function' && typeof client.pipeline === 'function') {
    return new IORedisAdapter(client);
  }
  if (client && typeof client.sendCommand === 'function') {
    if (typeof client.getSlotMaster === 'function') return new NodeRedisClusterAdapter(client);
    return new NodeRedisAdapter(client);
  }
  throw new TypeError(
    'createLimiter: expected a node-redis client or cluster (createClient / createCluster), ' +
      'an ioredis Redis or Cluster, or an adapter { call(args), batch(commands) }',
  );
}

// ---------------------------------------------------------------------------
// Arguments

const UNIT_MS = { ms: 1, s: 1000, m: 60000, h: 3600000, d: 86400000 };
const DURATION_RE = /^([0-9]+)(ms|s|m|h|d)?$/i;

// Numbers sent as strings (node-redis takes only strings and Buffers), through a small
// direct-mapped cache: the same few limits come again and again.
const CACHE_SLOTS = 256;
const intKeys = new Array(CACHE_SLOTS).fill(-1);
const intStrs = new Array(CACHE_SLOTS).fill('');
const msKeys = new Array(CACHE_SLOTS).fill(-1);
const msStrs = new Array(CACHE_SLOTS).fill('');

function intArg(value, what) {
  if (typeof value === 'number') {
    const slot = value & (CACHE_SLOTS - 1);
    if (intKeys[slot] === value) return intStrs[slot];
    const s = String(value);
    intKeys[slot] = value;
    intStrs[slot] = s;
    return s;
  }
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint') return String(value);
  throw new TypeError(`${what} must be an integer (number, bigint or decimal string)`);
}

// A duration: a number of milliseconds (sent as "<n>ms") or an RL duration string
// ("1500ms", "60", "1m", sent as is).
function durationArg(value, what) {
  if (typeof value === 'string') return value;
  if (typeof value === 'number') {
    const slot = value & (CACHE_SLOTS - 1);
    if (msKeys[slot] === value) return msStrs[slot];
    if (!Number.isFinite(value)) throw new TypeError(`${what} must be a finite number of milliseconds`);
    const s = `${value}ms`;
    msKeys[slot] = value;
    msStrs[slot] = s;
    return s;
  }
  if (typeof value === 'bigint') return `${value}ms`;
  throw new TypeError(`${what} must be milliseconds (a number) or a duration string such as "1m"`);
}

const parsedDurations = new Map();

/** Milliseconds of a duration argument (number or "1m"), or null when it is not one. */
function durationMs(value) {
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'bigint') return Number(value);
  if (typeof value !== 'string') return null;
  let ms = parsedDurations.get(value);
  if (ms === undefined) {
    const m = DURATION_RE.exec(value);
    ms = m ? Number(m[1]) * UNIT_MS[(m[2] || 's').toLowerCase()] : null;
    if (parsedDurations.size < 1024) parsedDurations.set(value, ms);
  }
  return ms;
}

// The longest refill time reported (ms, about 292 years); the same in every RL client.
const MAX_REFILL_MS = 9223372036854;

// A count as a BigInt, or null when it is not a whole number.
function countOf(value) {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? BigInt(value) : null;
  if (typeof value === 'bigint') return value;
  if (typeof value === 'string' && /^[0-9]+$/.test(value)) return BigInt(value);
  return null;
}

// A bucket's window for RateLimit-Policy (ms): the time it takes to refill from empty,
// ceil(capacity * period / tokens), at most MAX_REFILL_MS, so that q=capacity per it never
// advertises more than the sustained rate. The period's own when the counts are not
// positive integers (the server refuses such a call); null when the period is unknown.
function refillMs(capacity, tokens, period) {
  const p = durationMs(period);
  if (p === null) return null;
  if (Number.isSafeInteger(capacity) && Number.isSafeInteger(tokens) && capacity >= 1 && tokens >= 1 && p >= 0) {
    const cp = capacity * p;
    if (Number.isSafeInteger(cp)) {
      const r = cp % tokens;
      return Math.min((cp - r) / tokens + (r > 0 ? 1 : 0), MAX_REFILL_MS);
    }
  }
  const c = countOf(capacity);
  const t = countOf(tokens);
  if (c === null || t === null || c < 1n || t < 1n || !Number.isSafeInteger(p) || p < 0) return p;
  const w = (c * BigInt(p) + t - 1n) / t;
  return w > BigInt(MAX_REFILL_MS) ? MAX_REFILL_MS : Number(w);
}

function textArg(value, what) {
  if (typeof value === 'string' || Buffer.isBuffer(value)) return value;
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  throw new TypeError(`${what} must be a string or a Buffer`);
}

function keyArg(key) {
  if (typeof key === 'string' || Buffer.isBuffer(key)) return key;
  throw new TypeError('a key must be a string or a Buffer');
}

const OPTIONS = { cost: 'COST', refund: 'REFUND', debit: 'DEBIT', delay: 'DELAY' };

function pushOptions(out, opts, allowDelay) {
  if (opts === undefined || opts === null) return;
  if (typeof opts !== 'object') throw new TypeError('options must be an object such as { cost: 2 }');
  for (const name of Object.keys(opts)) {
    const value = opts[name];
    if (value === undefined) continue;
    const word = OPTIONS[name];
    if (word === undefined) {
      throw new TypeError(`unknown option '${name}': expected cost, refund, debit or delay`);
    }
    if (word === 'DELAY') {
      if (!allowDelay) {
        throw new TypeError('delay belongs to a GCRA policy in all(): policies.gcra(capacity, tokens, period, { delay })');
      }
      out.push(word, durationArg(value, 'delay'));
    } else {
      out.push(word, intArg(value, name));
    }
  }
}

// ---------------------------------------------------------------------------
// Decisions

const ceilS = (ms) => Math.ceil(ms / 1000);

// The headers of a decision: times in ms (Decision) or in seconds (ThrottleDecision).
function headersOf(name, allowed, limit, remaining, retryS, resetS, windowMs) {
  const reset = String(resetS);
  const h = {
    'RateLimit-Policy': `"${name}";q=${limit}` + (windowMs === null ? '' : `;w=${ceilS(windowMs)}`),
    RateLimit: `"${name}";r=${remaining};t=${reset}`,
    'X-RateLimit-Limit': String(limit),
    'X-RateLimit-Remaining': String(remaining),
    'X-RateLimit-Reset': reset,
  };
  if (!allowed && retryS !== null) h['Retry-After'] = String(retryS);
  return h;
}

/** What Decision and ThrottleDecision share: a reply of five integers, read on demand. */
class FiveIntegers {
  /**
   * reply: the five integers; window: RateLimit-Policy's w (ms or "1m"): the call's window
   * or ttl, a bucket's time to refill from empty.
   */
  constructor(reply, window) {
    /** The server's reply: [verdict, limit, remaining, retry_after, reset_after]. */
    this.reply = reply;
    this._window = window;
  }
  get limit() {
    return Number(this.reply[1]);
  }
  get remaining() {
    return Number(this.reply[2]);
  }
  /** RateLimit-Policy's w in ms, when known: the call's window or ttl; for a bucket, its time to refill from empty. */
  get window() {
    return durationMs(this._window);
  }
  /** retry_after, null when negative. */
  _retry() {
    const retry = Number(this.reply[3]);
    return retry < 0 ? null : retry;
  }
}

/**
 * The typed five-integer reply. Times are in milliseconds; `retryAfter` is null when the
 * call can never pass (it asked for more than the limit), 0 when allowed (with DELAY: the wait).
 * It keeps the server's reply (`reply`: [allowed, limit, remaining, retry_after_ms,
 * reset_after_ms]) and reads the fields from it.
 */
class Decision extends FiveIntegers {
  get allowed() {
    return Number(this.reply[0]) === 1;
  }
  get retryAfter() {
    return this._retry();
  }
  get resetAfter() {
    return Number(this.reply[4]);
  }

  /**
   * HTTP response headers: RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers),
   * X-RateLimit-Limit/-Remaining/-Reset, and Retry-After when rejected and a retry can pass.
   */
  headers(policyName = 'default') {
    const retry = this.retryAfter;
    return headersOf(
      policyName,
      this.allowed,
      this.limit,
      this.remaining,
      retry === null ? null : ceilS(retry),
      ceilS(this.resetAfter),
      this.window,
    );
  }

  toJSON() {
    const { allowed, limit, remaining, retryAfter, resetAfter, window } = this;
    return { allowed, limit, remaining, retryAfter, resetAfter, window };
  }
}

/** RL.ALL: the combined decision, and `decisions[i]` for `keys[i]`. */
class AllDecision extends Decision {
  /** words: each key's policy word (FIXED, ..., PENALTY), to find the key the combined limit is from. */
  constructor(reply, keys, windows, words) {
    const decisions = [];
    for (let i = 1; i < reply.length; i++) decisions.push(new Decision(reply[i], windows[i - 1]));
    // The combined limit and remaining are the first rate limit's (PENALTY policies only
    // when there is nothing else) with the smallest remaining: RateLimit-Policy's w is its window.
    const combined = reply[0];
    const onlyPenalty = !words || words.every((w) => w === 'PENALTY');
    let at = -1;
    for (let i = 0; i < decisions.length; i++) {
      if (!onlyPenalty && words[i] === 'PENALTY') continue;
      const d = decisions[i];
      if (Number(d.reply[2]) === Number(combined[2]) && Number(d.reply[1]) === Number(combined[1])) {
        at = i;
        break;
      }
    }
    super(combined, at < 0 ? null : windows[at]);
    this.keys = keys;
    this.decisions = decisions;
  }
  toJSON() {
    return { ...super.toJSON(), decisions: this.decisions.map((d) => d.toJSON()) };
  }
}

/**
 * CL.THROTTLE's reply (redis-cell's form): times in whole seconds (`reply`: [limited,
 * limit, remaining, retry_after_s, reset_after_s]).
 */
class ThrottleDecision extends FiveIntegers {
  get limited() {
    return Number(this.reply[0]) === 1;
  }
  get allowed() {
    return Number(this.reply[0]) !== 1;
  }
  /** Seconds until a retry can pass; null when allowed (-1) or when it never can. */
  get retryAfterSeconds() {
    return this._retry();
  }
  get resetAfterSeconds() {
    return Number(this.reply[4]);
  }
  headers(policyName = 'default') {
    return headersOf(policyName, this.allowed, this.limit, this.remaining, this.retryAfterSeconds, this.resetAfterSeconds, this.window);
  }
  toJSON() {
    const { limited, allowed, limit, remaining, retryAfterSeconds, resetAfterSeconds, window } = this;
    return { limited, allowed, limit, remaining, retryAfterSeconds, resetAfterSeconds, window };
  }
}

// `command`: its name, or the call's arguments (named only on an error).
function checkDecisionReply(reply, command) {
  if (!Array.isArray(reply) || reply.length !== 5) {
    if (Array.isArray(command)) command = commandOf(command);
    throw new RLError(`${command}: unexpected reply ${JSON.stringify(reply)}`, { command });
  }
  return reply;
}

// ---------------------------------------------------------------------------
// Policies for RL.ALL

class Policy {
  /** window: the policy's window or ttl; for a bucket, its time to refill from empty (ms). */
  constructor(word, command, args, window) {
    this.word = word;
    this.command = command;
    this.args = args;
    /**
     * RateLimit-Policy's w in ms, when known: the window (or ttl); for a bucket (BUCKET, GCRA,
     * SHARE), the time it takes to refill from empty, ceil(capacity * period / tokens).
     */
    this.window = durationMs(window);
  }
}

const policies = {
  fixed: (limit, window) => new Policy('FIXED', 'RL.FIXED', [intArg(limit, 'limit'), durationArg(window, 'window')], window),
  sliding: (limit, window) =>
    new Policy('SLIDING', 'RL.SLIDING', [intArg(limit, 'limit'), durationArg(window, 'window')], window),
  slidingCounter: (limit, window) =>
    new Policy('SLIDINGCOUNTER', 'RL.SLIDINGCOUNTER', [intArg(limit, 'limit'), durationArg(window, 'window')], window),
  bucket: (capacity, tokens, period) =>
    new Policy(
      'BUCKET',
      'RL.BUCKET',
      [intArg(capacity, 'capacity'), intArg(tokens, 'tokens'), durationArg(period, 'period')],
      refillMs(capacity, tokens, period),
    ),
  gcra: (capacity, tokens, period, opts) => {
    const args = [intArg(capacity, 'capacity'), intArg(tokens, 'tokens'), durationArg(period, 'period')];
    if (opts !== undefined && opts !== null) {
      for (const name of Object.keys(opts)) {
        if (opts[name] === undefined) continue;
        if (name !== 'delay') throw new TypeError(`unknown GCRA policy option '${name}': expected delay`);
        args.push('DELAY', durationArg(opts.delay, 'delay'));
      }
    }
    return new Policy('GCRA', 'RL.GCRA', args, refillMs(capacity, tokens, period));
  },
  acquire: (limit, ttl, id) =>
    new Policy('ACQUIRE', 'RL.ACQUIRE', [intArg(limit, 'limit'), durationArg(ttl, 'ttl'), textArg(id, 'id')], ttl),
  penalty: (strikes, window, block, max) =>
    new Policy(
      'PENALTY',
      'RL.PENALTY',
      [intArg(strikes, 'strikes'), durationArg(window, 'window'), durationArg(block, 'block'), durationArg(max, 'max')],
      window,
    ),
  share: (tenant, weight, capacity, tokens, period) =>
    new Policy(
      'SHARE',
      'RL.SHARE',
      [
        textArg(tenant, 'tenant'),
        intArg(weight, 'weight'),
        intArg(capacity, 'capacity'),
        intArg(tokens, 'tokens'),
        durationArg(period, 'period'),
      ],
      refillMs(capacity, tokens, period),
    ),
};

// ---------------------------------------------------------------------------
// Commands. A call is its arguments (argv), built for the module (`RL.X key ...`) or the
// library (`FCALL rl_x 1 key ...`) and rebuilt at send time should the backend turn out
// the other, and a plan for its reply: a Decision or ThrottleDecision to fill in, an
// AllPlan, or RELEASED.

// The library function of each module command (CL.THROTTLE has none).
const FUNCTIONS = {
  'RL.FIXED': 'rl_fixed',
  'RL.SLIDING': 'rl_sliding',
  'RL.SLIDINGCOUNTER': 'rl_slidingcounter',
  'RL.BUCKET': 'rl_bucket',
  'RL.GCRA': 'rl_gcra',
  'CL.THROTTLE': null,
  'RL.ALL': 'rl_all',
  'RL.ACQUIRE': 'rl_acquire',
  'RL.RELEASE': 'rl_release',
  'RL.PENALTY': 'rl_penalty',
  'RL.SHARE': 'rl_share',
};
const COMMANDS = {};
for (const [command, fn] of Object.entries(FUNCTIONS)) if (fn) COMMANDS[fn] = command;

// Where a call's limit is, after the key (a failed-open decision reports it).
const LIMIT_AT = { 'RL.SHARE': 3 };

const RELEASED = { released: true };

class AllPlan {
  constructor(argv, keys, windows, limits, words) {
    this.argv = argv;
    this.keys = keys;
    this.windows = windows;
    this.limits = limits;
    this.words = words;
  }
}

// A plain decision's plan: its window argument, or null when it is not a duration.
const planOf = (window) => (typeof window === 'string' || typeof window === 'number' || typeof window === 'bigint' ? window : null);

const isFcall = (argv) => argv[0] === 'FCALL';
const commandOf = (argv) => (isFcall(argv) ? COMMANDS[argv[1]] || String(argv[1]) : argv[0]);

// The arguments for `backend`.
function argsFor(argv, backend) {
  const lib = backend === 'library';
  if (lib === isFcall(argv)) return argv;
  const command = commandOf(argv);
  if (command === 'RL.ALL') return lib ? ['FCALL', 'rl_all', ...argv.slice(1)] : ['RL.ALL', ...argv.slice(2)];
  if (!lib) return [command, ...argv.slice(3)];
  const fn = FUNCTIONS[command];
  if (!fn) {
    throw new RLUnsupportedError(
      `${command} has no Functions library function (the server has RL's library, not the module): ` +
        'use gcra(key, maxBurst + 1, count, period, { cost: quantity }), which decides alike on the same keys',
      { command },
    );
  }
  return ['FCALL', fn, '1', ...argv.slice(1)];
}

// A throttle's plan: its window, the time its bucket (max_burst + 1, count per period)
// takes to refill from empty.
class ThrottlePlan {
  constructor(maxBurst, count, period) {
    const burst = typeof maxBurst === 'number' ? maxBurst : countOf(maxBurst);
    const capacity = burst === null ? null : typeof burst === 'bigint' ? burst + 1n : burst + 1;
    this.window = refillMs(capacity, count, period);
  }
}

// The result of a reply. A plain decision's plan is its window argument itself, or a
// bucket's refill time in ms (a string, a number or null), so queuing one allocates
// nothing but its arguments.
function settlePlan(plan, reply, argv) {
  if (typeof plan !== 'object' || plan === null) return new Decision(checkDecisionReply(reply, argv), plan);
  if (plan === RELEASED) return Number(reply) === 1;
  if (plan instanceof ThrottlePlan) return new ThrottleDecision(checkDecisionReply(reply, argv), plan.window);
  if (plan instanceof AllPlan) {
    if (!Array.isArray(reply) || reply.length !== plan.keys.length + 1) {
      throw new RLError(`RL.ALL: unexpected reply ${JSON.stringify(reply)}`, { command: 'RL.ALL' });
    }
    for (const r of reply) checkDecisionReply(r, 'RL.ALL');
    return new AllDecision(reply, plan.keys, plan.windows, plan.words);
  }
  throw new RLError(`${commandOf(argv)}: no plan for its reply`, { command: commandOf(argv) });
}

const numberOr0 = (v) => {
  const n = Number(v);
  return Number.isFinite(n) ? n : 0;
};

// The decision a failed-open (allowed) or failed-closed call answers, carrying the error.
function fallback(argv, plan, allowed, error) {
  const a = allowed ? 1 : 0;
  const reply = (limit) => [a, limit, allowed ? limit : 0, allowed ? 0 : -1, 0];
  let result;
  if (plan instanceof AllPlan) {
    const each = plan.limits.map((l) => reply(numberOr0(l)));
    result = new AllDecision([each.length ? each[0] : reply(0), ...each], plan.keys, plan.windows, plan.words);
  } else {
    const command = commandOf(argv);
    const limit = numberOr0(argv[(isFcall(argv) ? 3 : 1) + (LIMIT_AT[command] || 1)]);
    result =
      plan instanceof ThrottlePlan
        ? new ThrottleDecision([1 - a, limit + 1, allowed ? limit + 1 : 0, -1, 0], plan.window)
        : new Decision(reply(limit), plan);
  }
  result.error = error;
  return result;
}

// `limit window` commands (RL.FIXED, RL.SLIDING, RL.SLIDINGCOUNTER): their builder.
function windowed(command, fn) {
  return (lib, key, limit, window, opts) => {
    const k = keyArg(key);
    const l = intArg(limit, 'limit');
    const w = durationArg(window, 'window');
    const argv = lib ? ['FCALL', fn, '1', k, l, w] : [command, k, l, w];
    if (opts !== undefined && opts !== null) pushOptions(argv, opts, false);
    return argv;
  };
}

// `capacity tokens period` commands (RL.BUCKET, RL.GCRA with its DELAY): their builder.
function rated(command, fn, allowDelay) {
  return (lib, key, capacity, tokens, period, opts) => {
    const k = keyArg(key);
    const c = intArg(capacity, 'capacity');
    const t = intArg(tokens, 'tokens');
    const p = durationArg(period, 'period');
    const argv = lib ? ['FCALL', fn, '1', k, c, t, p] : [command, k, c, t, p];
    if (opts !== undefined && opts !== null) pushOptions(argv, opts, allowDelay);
    return argv;
  };
}

// Argument builders, shared by RateLimiter and Pipeline; `lib`: build the library form.
const build = {
  fixed: windowed('RL.FIXED', 'rl_fixed'),
  sliding: windowed('RL.SLIDING', 'rl_sliding'),
  slidingCounter: windowed('RL.SLIDINGCOUNTER', 'rl_slidingcounter'),
  bucket: rated('RL.BUCKET', 'rl_bucket', false),
  gcra: rated('RL.GCRA', 'rl_gcra', true),
  // Always the module form: the library has no CL.THROTTLE (refused at send time).
  throttle(lib, key, maxBurst, count, period, quantity) {
    const argv = ['CL.THROTTLE', keyArg(key), intArg(maxBurst, 'maxBurst'), intArg(count, 'count'), durationArg(period, 'period')];
    if (quantity !== undefined && quantity !== null) argv.push(intArg(quantity, 'quantity'));
    return argv;
  },
  all(lib, entries, opts) {
    if (!Array.isArray(entries)) throw new TypeError('all(entries): entries must be an array of [key, policy]');
    const keys = [];
    const words = [];
    const windows = [];
    const limits = [];
    const kinds = [];
    for (const entry of entries) {
      const [key, policy] = Array.isArray(entry) ? entry : [entry && entry.key, entry && entry.policy];
      if (!(policy instanceof Policy)) {
        throw new TypeError('all(entries): each entry is [key, policy] with a policy from policies.*');
      }
      keys.push(keyArg(key));
      words.push(policy.word, ...policy.args);
      windows.push(policy.window);
      limits.push(policy.word === 'SHARE' ? policy.args[2] : policy.args[0]);
      kinds.push(policy.word);
    }
    pushOptions(words, opts, false);
    const n = String(keys.length);
    const argv = lib ? ['FCALL', 'rl_all', n, ...keys, ...words] : ['RL.ALL', n, ...keys, ...words];
    return new AllPlan(argv, keys, windows, limits, kinds);
  },
  acquire(lib, key, limit, ttl, id) {
    const k = keyArg(key);
    const rest = [intArg(limit, 'limit'), durationArg(ttl, 'ttl'), textArg(id, 'id')];
    return lib ? ['FCALL', 'rl_acquire', '1', k, ...rest] : ['RL.ACQUIRE', k, ...rest];
  },
  release(lib, key, id) {
    const k = keyArg(key);
    const i = textArg(id, 'id');
    return lib ? ['FCALL', 'rl_release', '1', k, i] : ['RL.RELEASE', k, i];
  },
  penalty(lib, key, strikes, window, block, max, opts) {
    const k = keyArg(key);
    const rest = [intArg(strikes, 'strikes'), durationArg(window, 'window'), durationArg(block, 'block'), durationArg(max, 'max')];
    const argv = lib ? ['FCALL', 'rl_penalty', '1', k, ...rest] : ['RL.PENALTY', k, ...rest];
    pushOptions(argv, opts, false);
    return argv;
  },
  share(lib, key, tenant, weight, capacity, tokens, period, opts) {
    const k = keyArg(key);
    const rest = [
      textArg(tenant, 'tenant'),
      intArg(weight, 'weight'),
      intArg(capacity, 'capacity'),
      intArg(tokens, 'tokens'),
      durationArg(period, 'period'),
    ];
    const argv = lib ? ['FCALL', 'rl_share', '1', k, ...rest] : ['RL.SHARE', k, ...rest];
    pushOptions(argv, opts, false);
    return argv;
  },
};

// ---------------------------------------------------------------------------
// The limiter

const CONNECTION_POLICIES = new Set(['throw', 'allow', 'deny']);

class RateLimiter {
  /**
   * @param client a node-redis client or cluster, an ioredis Redis or Cluster, or an adapter
   * @param options backend: 'auto' (default) | 'module' | 'library';
   *   onConnectionError: 'throw' (default) | 'allow' (fail open) | 'deny' (fail closed),
   *   or a function (error, command) => one of those.
   */
  constructor(client, options = {}) {
    this.adapter = adapterFor(client);
    const backend = options.backend === undefined ? 'auto' : options.backend;
    if (!['auto', 'module', 'library'].includes(backend)) {
      throw new TypeError("backend must be 'auto', 'module' or 'library'");
    }
    const onErr = options.onConnectionError === undefined ? 'throw' : options.onConnectionError;
    if (typeof onErr !== 'function' && !CONNECTION_POLICIES.has(onErr)) {
      throw new TypeError("onConnectionError must be 'throw', 'allow', 'deny' or a function returning one");
    }
    this.onConnectionError = onErr;
    this._forced = backend === 'auto' ? null : backend;
    this._backend = this._forced;
    this._detecting = null;
    this._supported = new Map();
  }

  // ---- backend

  /** 'module' or 'library': what the server has, learnt once (or forced). */
  backend() {
    if (this._backend !== null) return Promise.resolve(this._backend);
    if (this._detecting === null) {
      this._detecting = this._detect().then(
        (b) => {
          this._backend = b;
          this._detecting = null;
          return b;
        },
        (err) => {
          this._detecting = null;
          throw err;
        },
      );
    }
    return this._detecting;
  }

  async _probe(args) {
    try {
      return { value: await this.adapter.call(args) };
    } catch (err) {
      const e = toRLError(err, args.join(' '));
      if (e instanceof RLConnectionError) throw e;
      return { error: e };
    }
  }

  async _detect() {
    const info = await this._probe(['COMMAND', 'INFO', 'rl.gcra']);
    if (info.value !== undefined && commandInfoFound(info.value)) return 'module';
    const libs = await this._probe(['FUNCTION', 'LIST', 'LIBRARYNAME', 'rl']);
    if (libs.value !== undefined && libraryFunctions(libs.value) !== null) return 'library';
    const why = [info.error, libs.error].filter(Boolean).map((e) => e.message);
    throw new RLNotLoadedError(
      `neither RL.GCRA (COMMAND INFO) nor the Functions library 'rl' (FUNCTION LIST) is on this server` +
        (why.length ? ` (${why.join('; ')})` : '') +
        `. ${NOT_LOADED_HELP}`,
    );
  }

  /** Whether the server's RL has `command` (e.g. 'RL.SHARE'), on the backend in use. */
  async supports(command) {
    const name = String(command).toUpperCase();
    if (this._supported.has(name)) return this._supported.get(name);
    const backend = await this.backend();
    let yes;
    if (backend === 'module') {
      const info = await this._probe(['COMMAND', 'INFO', name]);
      yes = info.value !== undefined && commandInfoFound(info.value);
    } else {
      const fn = FUNCTIONS[name];
      const libs = fn ? await this._probe(['FUNCTION', 'LIST', 'LIBRARYNAME', 'rl']) : {};
      const names = libs.value !== undefined ? libraryFunctions(libs.value) : null;
      yes = names !== null && names.includes(fn);
    }
    this._supported.set(name, yes);
    return yes;
  }

  get _lib() {
    return this._backend === 'library';
  }

  // ---- running calls

  // A connection error: raised, or (not for a release) a made-up decision carrying it.
  _onConnectionError(error, argv, plan) {
    const rule = typeof this.onConnectionError === 'function' ? this.onConnectionError(error, commandOf(argv)) : this.onConnectionError;
    if (plan !== RELEASED && (rule === 'allow' || rule === 'deny')) return fallback(argv, plan, rule === 'allow', error);
    throw error;
  }

  _settleConnection(error, argv, plan) {
    try {
      return this._onConnectionError(error, argv, plan);
    } catch (thrown) {
      return thrown;
    }
  }

  _failed(err, command) {
    const e = toRLError(err, command);
    if (e instanceof RLNotLoadedError && this._forced === null) this._backend = null;
    return e;
  }

  async _run(argv, plan) {
    let reply;
    try {
      const backend = this._backend !== null ? this._backend : await this.backend();
      reply = await this.adapter.call(argsFor(argv, backend));
    } catch (err) {
      const e = this._failed(err, commandOf(argv));
      if (e instanceof RLConnectionError) return this._onConnectionError(e, argv, plan);
      throw e;
    }
    return settlePlan(plan, reply, argv);
  }

  // Many calls in one batch: results in order, a failed call's slot holds its RLError.
  async _runBatch(argvs, plans) {
    const n = argvs.length;
    if (n === 0) return [];
    const out = new Array(n);
    let backend;
    try {
      backend = this._backend !== null ? this._backend : await this.backend();
    } catch (err) {
      const e = toRLError(err, 'pipeline');
      if (!(e instanceof RLConnectionError)) throw e;
      for (let i = 0; i < n; i++) out[i] = this._settleConnection(e, argvs[i], plans[i]);
      return out;
    }
    // Calls queued before the backend was known, or refused by it (CL.THROTTLE on the
    // library), are rebuilt or left out; the others go as they are.
    const lib = backend === 'library';
    let commands = argvs;
    let sendAt = null;
    for (let i = 0; i < n; i++) {
      if (isFcall(argvs[i]) === lib) continue;
      if (commands === argvs) commands = argvs.slice();
      try {
        commands[i] = argsFor(argvs[i], backend);
      } catch (err) {
        out[i] = toRLError(err, commandOf(argvs[i]));
        if (sendAt === null) sendAt = [];
      }
    }
    if (sendAt !== null) {
      for (let i = 0; i < n; i++) if (out[i] === undefined) sendAt.push(i);
      commands = sendAt.map((i) => commands[i]);
    }
    let replies;
    let errors;
    try {
      ({ replies, errors } = commands.length ? await this.adapter.batch(commands) : { replies: [], errors: null });
    } catch (err) {
      const e = toRLError(err, 'pipeline');
      if (!(e instanceof RLConnectionError)) throw e;
      for (let j = 0; j < commands.length; j++) {
        const i = sendAt === null ? j : sendAt[j];
        out[i] = this._settleConnection(e, argvs[i], plans[i]);
      }
      return out;
    }
    for (let j = 0; j < commands.length; j++) {
      const i = sendAt === null ? j : sendAt[j];
      const error = errors === null ? undefined : errors[j];
      if (error === undefined || error === null) {
        try {
          out[i] = settlePlan(plans[i], replies[j], argvs[i]);
        } catch (err) {
          out[i] = toRLError(err, commandOf(argvs[i]));
        }
      } else {
        const e = this._failed(error, commandOf(argvs[i]));
        out[i] = e instanceof RLConnectionError ? this._settleConnection(e, argvs[i], plans[i]) : e;
      }
    }
    return out;
  }

  /** A pipeline: queue calls, then `await exec()` sends them in one round trip. */
  pipeline() {
    return new Pipeline(this);
  }

  // ---- commands (each also exists on Pipeline, queued)

  /** RL.FIXED key limit window [COST n | REFUND n | DEBIT n] */
  async fixed(key, limit, window, opts) {
    return this._run(build.fixed(this._lib, key, limit, window, opts), planOf(window));
  }
  /** RL.SLIDING key limit window [COST n | REFUND n] */
  async sliding(key, limit, window, opts) {
    return this._run(build.sliding(this._lib, key, limit, window, opts), planOf(window));
  }
  /** RL.SLIDINGCOUNTER key limit window [COST n | REFUND n | DEBIT n] */
  async slidingCounter(key, limit, window, opts) {
    return this._run(build.slidingCounter(this._lib, key, limit, window, opts), planOf(window));
  }
  /** RL.BUCKET key capacity tokens period [COST n | REFUND n | DEBIT n] */
  async bucket(key, capacity, tokens, period, opts) {
    return this._run(build.bucket(this._lib, key, capacity, tokens, period, opts), refillMs(capacity, tokens, period));
  }
  /** RL.GCRA key capacity tokens period [COST n | REFUND n | DEBIT n] [DELAY max] */
  async gcra(key, capacity, tokens, period, opts) {
    return this._run(build.gcra(this._lib, key, capacity, tokens, period, opts), refillMs(capacity, tokens, period));
  }
  /** CL.THROTTLE key max_burst count period [quantity] (module only) */
  async throttle(key, maxBurst, count, period, quantity) {
    return this._run(build.throttle(this._lib, key, maxBurst, count, period, quantity), new ThrottlePlan(maxBurst, count, period));
  }
  /** RL.ALL: [[key, policy], ...] all or nothing [COST n | REFUND n | DEBIT n] */
  async all(entries, opts) {
    const plan = build.all(this._lib, entries, opts);
    return this._run(plan.argv, plan);
  }
  /** RL.ACQUIRE key limit ttl id */
  async acquire(key, limit, ttl, id) {
    return this._run(build.acquire(this._lib, key, limit, ttl, id), planOf(ttl));
  }
  /** RL.RELEASE key id: true if the lease was held and is now released */
  async release(key, id) {
    return this._run(build.release(this._lib, key, id), RELEASED);
  }
  /** RL.PENALTY key strikes window block max [COST n] */
  async penalty(key, strikes, window, block, max, opts) {
    return this._run(build.penalty(this._lib, key, strikes, window, block, max, opts), planOf(window));
  }
  /** RL.SHARE key tenant weight capacity tokens period [COST n | REFUND n | DEBIT n] */
  async share(key, tenant, weight, capacity, tokens, period, opts) {
    return this._run(
      build.share(this._lib, key, tenant, weight, capacity, tokens, period, opts),
      refillMs(capacity, tokens, period),
    );
  }

  // ---- leases

  /**
   * RL.ACQUIRE as a Lease: `lease.acquired`, `lease.decision`, `await lease.release()`
   * (once; later calls answer false), and `await using lease = ...` where supported.
   * Without `id` a random UUID names the lease.
   */
  async lease(key, limit, ttl, id) {
    const leaseId = id === undefined || id === null ? randomUUID() : id;
    const decision = await this.acquire(key, limit, ttl, leaseId);
    return new Lease(this, key, leaseId, decision);
  }

  /**
   * Runs `fn(lease)` holding a lease, and releases it in `finally`. Rejected: throws
   * RLLeaseRejectedError (with `.decision`) and `fn` does not run.
   */
  async withLease(key, limit, ttl, id, fn) {
    if (typeof fn !== 'function') throw new TypeError('withLease(key, limit, ttl, id, fn): fn must be a function');
    const lease = await this.lease(key, limit, ttl, id);
    if (!lease.acquired) throw new RLLeaseRejectedError(lease.decision, key);
    let result;
    try {
      result = await fn(lease);
    } catch (err) {
      try {
        await lease.release();
      } catch (releaseError) {
        // fn's error is the one to see; the lease ends by itself after ttl.
        if (err !== null && typeof err === 'object') err.releaseError = releaseError;
      }
      throw err;
    }
    await lease.release();
    return result;
  }
}

function commandInfoFound(reply) {
  if (Array.isArray(reply)) return reply.length > 0 && reply[0] !== null && reply[0] !== undefined;
  if (reply instanceof Map) return reply.size > 0;
  return reply !== null && typeof reply === 'object' && Object.keys(reply).length > 0;
}

// FUNCTION LIST's entry for library 'rl': its function names, or null when absent.
function libraryFunctions(reply) {
  if (!Array.isArray(reply)) return null;
  for (const lib of reply) {
    const fields = asFields(lib);
    if (fields === null) continue;
    const name = fields.get('library_name');
    if (name === undefined || String(name) !== 'rl') continue;
    const fns = fields.get('functions');
    const names = [];
    if (Array.isArray(fns)) {
      for (const f of fns) {
        const ff = asFields(f);
        if (ff !== null && ff.get('name') !== undefined) names.push(String(ff.get('name')));
      }
    }
    return names;
  }
  return null;
}

// A RESP2 flat [k, v, k, v] array, a RESP3 Map or a plain object, as a Map.
function asFields(entry) {
  if (entry instanceof Map) {
    const m = new Map();
    for (const [k, v] of entry) m.set(String(k), v);
    return m;
  }
  if (Array.isArray(entry)) {
    const m = new Map();
    for (let i = 0; i + 1 < entry.length; i += 2) m.set(String(entry[i]), entry[i + 1]);
    return m;
  }
  if (entry !== null && typeof entry === 'object') return new Map(Object.entries(entry));
  return null;
}

/** Queued calls sent in one round trip by exec(); each RL method returns the pipeline. */
class Pipeline {
  constructor(limiter) {
    this.limiter = limiter;
    this._argvs = [];
    this._plans = [];
  }
  get length() {
    return this._argvs.length;
  }
  _add(argv, plan) {
    this._argvs.push(argv);
    this._plans.push(plan);
    return this;
  }
  fixed(key, limit, window, opts) {
    return this._add(build.fixed(this.limiter._lib, key, limit, window, opts), planOf(window));
  }
  sliding(key, limit, window, opts) {
    return this._add(build.sliding(this.limiter._lib, key, limit, window, opts), planOf(window));
  }
  slidingCounter(key, limit, window, opts) {
    return this._add(build.slidingCounter(this.limiter._lib, key, limit, window, opts), planOf(window));
  }
  bucket(key, capacity, tokens, period, opts) {
    return this._add(build.bucket(this.limiter._lib, key, capacity, tokens, period, opts), refillMs(capacity, tokens, period));
  }
  gcra(key, capacity, tokens, period, opts) {
    return this._add(build.gcra(this.limiter._lib, key, capacity, tokens, period, opts), refillMs(capacity, tokens, period));
  }
  throttle(key, maxBurst, count, period, quantity) {
    return this._add(build.throttle(this.limiter._lib, key, maxBurst, count, period, quantity), new ThrottlePlan(maxBurst, count, period));
  }
  all(entries, opts) {
    const plan = build.all(this.limiter._lib, entries, opts);
    return this._add(plan.argv, plan);
  }
  acquire(key, limit, ttl, id) {
    return this._add(build.acquire(this.limiter._lib, key, limit, ttl, id), planOf(ttl));
  }
  release(key, id) {
    return this._add(build.release(this.limiter._lib, key, id), RELEASED);
  }
  penalty(key, strikes, window, block, max, opts) {
    return this._add(build.penalty(this.limiter._lib, key, strikes, window, block, max, opts), planOf(window));
  }
  share(key, tenant, weight, capacity, tokens, period, opts) {
    return this._add(
      build.share(this.limiter._lib, key, tenant, weight, capacity, tokens, period, opts),
      refillMs(capacity, tokens, period),
    );
  }
  /**
   * Sends every queued call at once. Resolves to one result per call, in order: its
   * decision, or the RLError it got (a bad call does not hide the others' decisions).
   */
  exec() {
    const argvs = this._argvs;
    const plans = this._plans;
    this._argvs = [];
    this._plans = [];
    return this.limiter._runBatch(argvs, plans);
  }
}

class Lease {
  constructor(limiter, key, id, decision) {
    this.limiter = limiter;
    this.key = key;
    this.id = id;
    this.decision = decision;
    this.acquired = decision.allowed;
    this._released = !decision.allowed || decision.error !== undefined;
  }
  /** RL.RELEASE, once: true if this call released the lease. */
  async release() {
    if (this._released) return false;
    this._released = true;
    return this.limiter.release(this.key, this.id);
  }
}
if (typeof Symbol.asyncDispose === 'symbol') {
  Lease.prototype[Symbol.asyncDispose] = async function dispose() {
    await this.release();
  };
}

/** A RateLimiter over the application's node-redis or ioredis client. */
function createLimiter(client, options) {
  return new RateLimiter(client, options);
}

module.exports = {
  VERSION,
  createLimiter,
  RateLimiter,
  Pipeline,
  Lease,
  Decision,
  AllDecision,
  ThrottleDecision,
  Policy,
  policies,
  adapterFor,
  IORedisAdapter,
  NodeRedisAdapter,
  NodeRedisClusterAdapter,
  durationMs,
  RLError,
  RLServerError,
  RLArgumentError,
  RLWrongTypeError,
  RLOutOfMemoryError,
  RLNotLoadedError,
  RLUnsupportedError,
  RLConnectionError,
  RLLeaseRejectedError,
};
