'use strict';
// The limiter: backend detection, the deadline of a call, fail modes, pipelines and
// leases. Each command's method comes from commands.generated.js (installed below).

const { randomUUID } = require('node:crypto');
const { RLConnectionError, RLNotLoadedError, RLTimeoutError, RLUnsupportedError, RLLeaseRejectedError } = require('./errors');
const { refuse, isMissing, toRLError, NOT_LOADED_HELP } = require('./classify');
const { adapterFor } = require('./adapters');
const { integer } = require('./args');
const { settle, failed } = require('./decisions');
const generated = require('./commands.generated');
const { Survival } = require('./survive');

const DEFAULT_TIMEOUT_MS = 100;
const FAIL_MODES = new Set(['throw', 'raise', 'allow', 'deny']);

// What to use instead of a command the library does not have.
const INSTEAD = {
  'CL.THROTTLE': 'use gcra(key, maxBurst + 1, count, period, { cost: quantity }), which decides alike on the same keys',
};

// A call's arguments for `backend`: `RL.X key ...` for the module, `FCALL rl_x 1 key ...`
// for the library (`FCALL rl_x numkeys key...` for RL.ALL).
function argsFor(argv, command, backend) {
  const lib = backend === 'library';
  if (lib === (argv[0] === 'FCALL')) return argv;
  if (!lib) return [command.name, ...argv.slice(command.counted ? 2 : 3)];
  if (command.fn === null) {
    throw new RLUnsupportedError(
      `${command.name} has no Functions library function (the server has RL's library, not the module)` +
        (INSTEAD[command.name] ? `: ${INSTEAD[command.name]}` : ''),
      { command: command.name },
    );
  }
  return command.counted ? ['FCALL', command.fn, ...argv.slice(1)] : ['FCALL', command.fn, '1', ...argv.slice(1)];
}

// A command still unknown after detecting the backend again: the server's RL is older.
const unsupported = (command, backend, cause) =>
  new RLUnsupportedError(
    `${command.name}: the server's RL (${backend}) has no ${command.name}: it is older than this client; upgrade the ${backend}`,
    { cause, code: cause.code, command: command.name },
  );

function commandInfoFound(reply) {
  if (Array.isArray(reply)) return reply.length > 0 && reply[0] !== null && reply[0] !== undefined;
  if (reply instanceof Map) return reply.size > 0;
  return reply !== null && typeof reply === 'object' && Object.keys(reply).length > 0;
}

// A RESP2 flat [k, v, k, v] array, a RESP3 Map or a plain object, as a Map.
function asFields(entry) {
  if (entry instanceof Map) return new Map([...entry].map(([k, v]) => [String(k), v]));
  if (Array.isArray(entry)) {
    const m = new Map();
    for (let i = 0; i + 1 < entry.length; i += 2) m.set(String(entry[i]), entry[i + 1]);
    return m;
  }
  if (entry !== null && typeof entry === 'object') return new Map(Object.entries(entry));
  return null;
}

// FUNCTION LIST's entry for library 'rl': its function names, or null when absent.
function libraryFunctions(reply) {
  if (!Array.isArray(reply)) return null;
  for (const lib of reply) {
    const fields = asFields(lib);
    if (fields === null || String(fields.get('library_name')) !== 'rl') continue;
    const fns = fields.get('functions');
    return (Array.isArray(fns) ? fns : []).map(asFields).filter((f) => f !== null && f.get('name') !== undefined).map((f) => String(f.get('name')));
  }
  return null;
}

class RateLimiter {
  /**
   * @param client a node-redis client or cluster, an ioredis Redis or Cluster, or an adapter
   * @param options backend: 'auto' (default) | 'module' | 'library';
   *   timeout: each call's deadline in ms (default 100);
   *   onConnectionError: 'throw' (default) | 'allow' (fail open) | 'deny' (fail closed),
   *   or a function (error, command) => one of those;
   *   cacheSize: how many blocked keys to remember (default 0: no cache);
   *   cacheMax: the longest a rejection is cached, in ms (default 1000);
   *   fallbackInstances: how many app instances share the limits (default 0: no fallback);
   *   probeEvery: while falling back, the server is tried at most this often, in ms (default 500).
   */
  constructor(client, options = {}) {
    if (options === null || typeof options !== 'object') throw refuse('createLimiter', 'options must be an object');
    this.adapter = adapterFor(client);
    const backend = options.backend === undefined ? 'auto' : options.backend;
    if (!['auto', 'module', 'library'].includes(backend)) {
      throw refuse('createLimiter', "backend must be 'auto', 'module' or 'library'");
    }
    const mode = options.onConnectionError === undefined ? 'throw' : options.onConnectionError;
    if (typeof mode !== 'function' && !FAIL_MODES.has(mode)) {
      throw refuse('createLimiter', "onConnectionError must be 'throw', 'allow', 'deny' or a function returning one");
    }
    this.onConnectionError = mode;
    /** Each call's deadline (ms): no reply by then is a connection error (RLTimeoutError). */
    this.timeout = options.timeout === undefined ? DEFAULT_TIMEOUT_MS : integer(options.timeout, 'createLimiter', 'timeout', 1, 2147483647);
    this._forced = backend === 'auto' ? null : backend;
    this._backend = this._forced;
    this._detecting = null;
    const opt = (name, fallback, min) =>
      options[name] === undefined ? fallback : integer(options[name], 'createLimiter', name, min, 2147483647);
    const cacheSize = opt('cacheSize', 0, 0);
    const instances = opt('fallbackInstances', 0, 0);
    /** The blocked-key cache and the fallback limiter (docs/clients.md); null when neither is on. */
    this._survival =
      cacheSize > 0 || instances > 0 ? new Survival(cacheSize, opt('cacheMax', 1000, 1), instances, opt('probeEvery', 500, 0)) : null;
  }

  // ---- backend

  /** 'module' or 'library': what the server has, learnt by the first call (or forced). */
  backend() {
    return this._backend !== null ? Promise.resolve(this._backend) : this.detect();
  }

  /**
   * Asks the server which backend it has (every time; a call made meanwhile shares the
   * question) and uses the answer unless a backend was forced.
   */
  detect() {
    if (this._detecting === null) {
      this._detecting = this._detect().then(
        (b) => {
          this._detecting = null;
          if (this._forced === null) this._backend = b;
          return b;
        },
        (err) => {
          this._detecting = null;
          if (this._forced === null) this._backend = null;
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
    const spec = generated.COMMANDS[String(command).toUpperCase()];
    if (spec === undefined) return false;
    if ((await this.backend()) === 'module') {
      const info = await this._probe(['COMMAND', 'INFO', spec.name]);
      return info.value !== undefined && commandInfoFound(info.value);
    }
    if (spec.fn === null) return false;
    const libs = await this._probe(['FUNCTION', 'LIST', 'LIBRARYNAME', 'rl']);
    const names = libs.value !== undefined ? libraryFunctions(libs.value) : null;
    return names !== null && names.includes(spec.fn);
  }

  get _lib() {
    return this._backend === 'library';
  }

  // ---- the deadline and the fail modes

  /** `work`, or an RLTimeoutError when it has not settled within the deadline. */
  _withinDeadline(work, what) {
    const ms = this.timeout;
    let timer;
    const expired = new Promise((resolve, reject) => {
      timer = setTimeout(() => reject(new RLTimeoutError(`${what}: no reply within ${ms} ms`, { command: what })), ms);
    });
    return Promise.race([work, expired]).finally(() => clearTimeout(timer));
  }

  /** A connection error's outcome: raised, or the decision the fail mode gives (carrying it). */
  _failMode(error, command, plan, limit, shadow) {
    const mode = typeof this.onConnectionError === 'function' ? this.onConnectionError(error, command.name) : this.onConnectionError;
    if (mode === 'allow' || mode === 'deny') {
      const d = failed(mode, command, plan, limit, error, shadow);
      if (d !== null) return d;
    }
    throw error;
  }

  _failModeSlot(error, command, plan, limit, shadow) {
    try {
      return this._failMode(error, command, plan, limit, shadow);
    } catch (thrown) {
      return thrown;
    }
  }

  // ---- one call

  // Called by each command's method: sends the call, within the deadline. A shadow call
  // (SHADOW) always goes to the server: the cache and the fallback would hide it from
  // the server's counts, which are what a limit being tried is for.
  _queue(argv, command, plan, limit, shadow) {
    const survival = this._survival;
    if (survival !== null && !shadow) {
      const t = survival.ticket(argv, command);
      if (t !== null) {
        const local = survival.before(t, limit, plan);
        return local !== null ? Promise.resolve(local) : this._run(argv, command, plan, limit, false, t);
      }
    }
    return this._run(argv, command, plan, limit, shadow);
  }

  // `t`: the call's ticket when the blocked-key cache or the fallback limiter is on.
  async _run(argv, command, plan, limit, shadow, t = null) {
    let reply;
    try {
      reply = await this._withinDeadline(this._send(argv, command), command.name);
    } catch (err) {
      const e = toRLError(err, command.name);
      if (!(e instanceof RLConnectionError)) {
        if (t !== null) this._survival.up();
        throw e;
      }
      const d = t === null ? null : this._survival.failed(t, limit, plan, e);
      return d !== null ? d : this._failMode(e, command, plan, limit, shadow);
    }
    const d = settle(command, reply, plan, shadow);
    return t === null ? d : this._survival.answered(t, d);
  }

  // The reply; a call the server answers does not exist is sent once more after
  // detecting the backend again (nothing was counted by the call that failed).
  async _send(argv, command) {
    const backend = this._backend !== null ? this._backend : await this.backend();
    try {
      return await this.adapter.call(argsFor(argv, command, backend));
    } catch (err) {
      const e = toRLError(err, command.name);
      if (!isMissing(e) || this._forced !== null) throw e;
    }
    const again = await this.detect();
    try {
      return await this.adapter.call(argsFor(argv, command, again));
    } catch (err) {
      const e = toRLError(err, command.name);
      throw isMissing(e) ? unsupported(command, again, e) : e;
    }
  }

  // ---- many calls in one round trip

  // Results in order; a failed call's slot holds its RLError (or its fail mode's decision).
  async _runBatch(argvs, commands, plans, limits, shadows) {
    const n = argvs.length;
    if (n === 0) return [];
    const out = new Array(n);
    let sent;
    try {
      sent = await this._withinDeadline(this._sendBatch(argvs, commands), 'pipeline');
    } catch (err) {
      const e = toRLError(err, 'pipeline');
      if (!(e instanceof RLConnectionError)) throw e;
      for (let i = 0; i < n; i++) out[i] = this._failModeSlot(e, commands[i], plans[i], limits[i], shadows[i]);
      return out;
    }
    const { replies, errors } = sent;
    for (let i = 0; i < n; i++) {
      const error = errors === null ? undefined : errors[i];
      if (error == null) {
        try {
          out[i] = settle(commands[i], replies[i], plans[i], shadows[i]);
        } catch (err) {
          out[i] = toRLError(err, commands[i].name);
        }
      } else {
        const e = toRLError(error, commands[i].name);
        out[i] = e instanceof RLConnectionError ? this._failModeSlot(e, commands[i], plans[i], limits[i], shadows[i]) : e;
      }
    }
    return out;
  }

  async _sendBatch(argvs, commands) {
    const backend = this._backend !== null ? this._backend : await this.backend();
    const first = await this._batchOn(backend, argvs, commands);
    if (first.errors === null || this._forced !== null) return first;
    const { replies, errors } = first;
    const again = [];
    for (let i = 0; i < argvs.length; i++) {
      if (errors[i] == null) continue;
      errors[i] = toRLError(errors[i], commands[i].name);
      if (isMissing(errors[i])) again.push(i);
    }
    if (again.length === 0) return first;
    const now = await this.detect();
    const retry = await this._batchOn(now, again.map((i) => argvs[i]), again.map((i) => commands[i]));
    again.forEach((i, j) => {
      const e = retry.errors === null || retry.errors[j] == null ? null : toRLError(retry.errors[j], commands[i].name);
      if (e === null) {
        errors[i] = undefined;
        replies[i] = retry.replies[j];
      } else {
        errors[i] = isMissing(e) ? unsupported(commands[i], now, e) : e;
      }
    });
    return first;
  }

  // The calls sent on `backend`; one it has no form of (CL.THROTTLE on the library)
  // fails in its slot.
  async _batchOn(backend, argvs, commands) {
    const n = argvs.length;
    let send = argvs;
    let errors = null;
    for (let i = 0; i < n; i++) {
      if ((backend === 'library') === (argvs[i][0] === 'FCALL')) continue;
      if (send === argvs) send = argvs.slice();
      try {
        send[i] = argsFor(argvs[i], commands[i], backend);
      } catch (err) {
        (errors === null ? (errors = new Array(n)) : errors)[i] = err;
      }
    }
    if (errors === null) return this.adapter.batch(send);
    const at = [];
    for (let i = 0; i < n; i++) if (errors[i] === undefined) at.push(i);
    const part = at.length ? await this.adapter.batch(at.map((i) => send[i])) : { replies: [], errors: null };
    const replies = new Array(n);
    at.forEach((i, j) => {
      if (part.errors !== null && part.errors[j] != null) errors[i] = part.errors[j];
      else replies[i] = part.replies[j];
    });
    return { replies, errors };
  }

  /** A pipeline: queue calls, then `await exec()` sends them in one round trip. */
  pipeline() {
    return new Pipeline(this);
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
    if (typeof fn !== 'function') throw refuse('withLease', 'withLease(key, limit, ttl, id, fn): fn must be a function');
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

/** Queued calls sent in one round trip by exec(); each command's method returns the pipeline. */
class Pipeline {
  constructor(limiter) {
    this.limiter = limiter;
    this._clear();
  }
  _clear() {
    this._argvs = [];
    this._commands = [];
    this._plans = [];
    this._limits = [];
    this._shadows = [];
  }
  get length() {
    return this._argvs.length;
  }
  get _lib() {
    return this.limiter._lib;
  }
  // Called by each command's method: queues the call.
  _queue(argv, command, plan, limit, shadow) {
    this._argvs.push(argv);
    this._commands.push(command);
    this._plans.push(plan);
    this._limits.push(limit);
    this._shadows.push(shadow);
    return this;
  }
  /**
   * Sends every queued call at once, within one deadline. Resolves to one result per call,
   * in order: its decision, or the RLError it got (a bad call does not hide the others').
   */
  exec() {
    const { _argvs, _commands, _plans, _limits, _shadows } = this;
    this._clear();
    return this.limiter._runBatch(_argvs, _commands, _plans, _limits, _shadows);
  }
}

Object.assign(RateLimiter.prototype, generated.limiterMethods);
Object.assign(Pipeline.prototype, generated.pipelineMethods);

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

module.exports = { RateLimiter, Pipeline, Lease, createLimiter, policies: generated.policies, COMMANDS: generated.COMMANDS };
