'use strict';
// The typed replies (Decision, AllDecision, ThrottleDecision) and their HTTP fields:
// RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers, structured-field
// lists), X-RateLimit-*, and Retry-After on a rejection.

const { RLError } = require('./errors');
const { refuse } = require('./classify');

// ---------------------------------------------------------------------------
// Structured-field values

// The largest structured-field integer.
const SF_MAX = 999999999999999;
const sfInteger = (n) => String(n > SF_MAX ? SF_MAX : n < -SF_MAX ? -SF_MAX : n);

const names = new Map();

/** A policy name as a structured-field string: `"` and `\` escaped; printable ASCII only. */
function sfString(name) {
  let s = names.get(name);
  if (s !== undefined) return s;
  if (typeof name !== 'string') throw refuse('headers()', `a policy name must be a string, not ${typeof name}`);
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) {
      throw refuse('headers()', `policy name ${JSON.stringify(name)} has a character outside printable ASCII at ${i}`);
    }
  }
  s = `"${name.replace(/[\\"]/g, '\\$&')}"`;
  if (names.size < 256) names.set(name, s);
  return s;
}

const ceilS = (ms) => Math.ceil(ms / 1000);

// One policy's members of RateLimit-Policy and RateLimit. `window` in ms, or null when
// unknown (then no w; never w=0); times of `resetS` in whole seconds.
function member(name, limit, remaining, resetS, windowMs) {
  const n = sfString(name);
  const w = windowMs === null ? 0 : ceilS(windowMs);
  return [`${n};q=${sfInteger(limit)}` + (w > 0 ? `;w=${sfInteger(w)}` : ''), `${n};r=${sfInteger(remaining)};t=${sfInteger(resetS)}`];
}

// The fields: `members` as [policy, limit] pairs, the combined decision's numbers for
// X-RateLimit-* and Retry-After (retryS null: none).
function fields(members, allowed, limit, remaining, retryS, resetS) {
  const reset = String(resetS);
  const h = {
    'RateLimit-Policy': members.length === 1 ? members[0][0] : members.map((m) => m[0]).join(', '),
    RateLimit: members.length === 1 ? members[0][1] : members.map((m) => m[1]).join(', '),
    'X-RateLimit-Limit': String(limit),
    'X-RateLimit-Remaining': String(remaining),
    'X-RateLimit-Reset': reset,
  };
  if (!allowed && retryS !== null) h['Retry-After'] = String(retryS);
  return h;
}

// ---------------------------------------------------------------------------
// Decisions

/** What Decision and ThrottleDecision share: a reply of five integers, read on demand. */
class FiveIntegers {
  /** reply: the five integers; window: RateLimit-Policy's w in ms, or null when unknown. */
  constructor(reply, window = null) {
    /** The server's reply: [verdict, limit, remaining, retry_after, reset_after]. */
    this.reply = reply;
    /**
     * RateLimit-Policy's w in ms, when known: the call's window (or ttl); for a bucket, the
     * time it takes to refill from empty, ceil(capacity * period / tokens).
     */
    this.window = window;
  }
  get limit() {
    return Number(this.reply[1]);
  }
  get remaining() {
    return Number(this.reply[2]);
  }
  /** retry_after, null when negative. */
  _retry() {
    const retry = Number(this.reply[3]);
    return retry < 0 ? null : retry;
  }
  /** This decision's members of RateLimit-Policy and RateLimit. */
  _member(name) {
    return member(name, this.limit, this.remaining, this._resetS(), this.window);
  }
  /**
   * HTTP response headers: RateLimit-Policy and RateLimit named `policyName` (a
   * structured-field string), X-RateLimit-Limit/-Remaining/-Reset, and Retry-After when
   * rejected and a retry can pass. None ({}) for a shadow decision: its limit is not in
   * force, so nobody is told of it or told to wait.
   */
  headers(policyName = 'default') {
    if (this.shadow) return {};
    return fields([this._member(policyName)], this.allowed, this.limit, this.remaining, this._retryS(), this._resetS());
  }
}

/**
 * The typed five-integer reply. Times are in milliseconds; `retryAfter` is null when the
 * call can never pass (it asked for more than the limit), 0 when allowed (with DELAY: the
 * wait). `reply` is the server's [allowed, limit, remaining, retry_after_ms, reset_after_ms].
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
  _retryS() {
    const retry = this._retry();
    return retry === null ? null : ceilS(retry);
  }
  _resetS() {
    return ceilS(this.resetAfter);
  }
  toJSON() {
    const { allowed, limit, remaining, retryAfter, resetAfter, window, shadow } = this;
    return { allowed, limit, remaining, retryAfter, resetAfter, window, shadow };
  }
}

// True only on a rejection the limiter's cache of blocked keys gave without asking the
// server (option cacheSize); its retryAfter is what is left of the server's.
Decision.prototype.cached = false;
// True when the call (or, in RL.ALL, the policy) was a shadow one (`{ shadow: true }`):
// the limit was tried, not enforced, so "not allowed" means "would have rejected".
Decision.prototype.shadow = false;

// `d` flagged shadow when `shadow`.
function flagged(d, shadow) {
  if (shadow) d.shadow = true;
  return d;
}

/**
 * RL.ALL: the combined decision, and `decisions[i]` for `keys[i]` (with `policies[i]`).
 * Its headers() give one member per policy.
 */
class AllDecision extends Decision {
  constructor(reply, keys, policies) {
    super(reply[0], null);
    this.keys = keys;
    this.policies = policies;
    this.decisions = new Array(policies.length);
    for (let i = 0; i < policies.length; i++) this.decisions[i] = flagged(new Decision(reply[i + 1], policies[i].window), policies[i].shadow);
  }
  /**
   * Each policy's name: `names[i]` when given, else its word in lower case ("gcra"),
   * followed by -N (its position from 1) when the call has that word more than once.
   */
  policyNames(names) {
    if (names !== undefined && names !== null) {
      if (!Array.isArray(names) || names.length !== this.policies.length) {
        throw refuse('headers()', `an RL.ALL decision takes one name per policy (${this.policies.length}), not ${JSON.stringify(names)}`);
      }
      return names;
    }
    const words = this.policies.map((p) => p.word.toLowerCase());
    return words.map((w, i) => (words.indexOf(w) !== words.lastIndexOf(w) ? `${w}-${i + 1}` : w));
  }
  /**
   * One RateLimit-Policy and RateLimit member per enforced policy, each with its own key's
   * numbers (shadow policies are left out, the others keep the names of their places);
   * none ({}) when every policy is a shadow one.
   */
  headers(names) {
    const named = this.policyNames(names);
    const members = [];
    for (let i = 0; i < this.decisions.length; i++) {
      if (!this.policies[i].shadow) members.push(this.decisions[i]._member(named[i]));
    }
    if (members.length === 0) return {};
    return fields(members, this.allowed, this.limit, this.remaining, this._retryS(), this._resetS());
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
  _retryS() {
    return this._retry();
  }
  _resetS() {
    return this.resetAfterSeconds;
  }
  toJSON() {
    const { limited, allowed, limit, remaining, retryAfterSeconds, resetAfterSeconds, window } = this;
    return { limited, allowed, limit, remaining, retryAfterSeconds, resetAfterSeconds, window };
  }
}

// ---------------------------------------------------------------------------
// From a reply, or from a fail mode

function checked(reply, command) {
  if (Array.isArray(reply) && reply.length === 5) return reply;
  throw new RLError(`${command}: unexpected reply ${JSON.stringify(reply)}`, { command });
}

/**
 * The result of `command`'s reply: `plan` is the call's window in ms (or null), or for
 * RL.ALL its { keys, policies }; `shadow`: a shadow call's decision is flagged.
 */
function settle(command, reply, plan, shadow) {
  switch (command.reply) {
    case 'decision':
      return flagged(new Decision(checked(reply, command.name), plan), shadow);
    case 'throttle':
      return new ThrottleDecision(checked(reply, command.name), plan);
    case 'released':
      return Number(reply) === 1;
    case 'all':
      if (!Array.isArray(reply) || reply.length !== plan.keys.length + 1) checked(null, command.name);
      for (const r of reply) checked(r, command.name);
      return new AllDecision(reply, plan.keys, plan.policies);
    default:
      throw new RLError(`${command.name}: no reading of a '${command.reply}' reply`, { command: command.name });
  }
}

// The reply a fail mode answers: allow gives allowed, remaining = limit, retry_after =
// reset_after = 0; deny gives not allowed, remaining 0, retry_after = reset_after = 1 s.
const allowReply = (limit) => [1, limit, limit, 0, 0];
const denyReply = (limit) => [0, limit, 0, 1000, 1000];

/**
 * The decision `mode` ('allow' or 'deny') answers for a call that got no reply, carrying
 * `error` (flagged shadow for a shadow call); null for a call that is not a decision
 * (RL.RELEASE).
 */
function failed(mode, command, plan, limit, error, shadow) {
  const reply = mode === 'allow' ? allowReply : denyReply;
  const n = (v) => (v === undefined || v === null ? 0 : Number(v));
  let d;
  switch (command.reply) {
    case 'decision':
      d = flagged(new Decision(reply(n(limit)), plan), shadow);
      break;
    case 'throttle':
      d = new ThrottleDecision(mode === 'allow' ? [0, n(limit), n(limit), -1, 0] : [1, n(limit), 0, 1, 1], plan);
      break;
    case 'all': {
      // The combined decision is the first enforced policy's, as the server's comes from
      // the enforced ones; with shadow policies only, the server allows: so does this.
      const each = plan.policies.map((p) => reply(n(p.limit)));
      const enforced = plan.policies.findIndex((p) => !p.shadow);
      const combined = enforced >= 0 ? each[enforced] : allowReply(n(plan.policies[0].limit));
      d = new AllDecision([combined, ...each], plan.keys, plan.policies);
      break;
    }
    default:
      return null;
  }
  d.error = error;
  return d;
}

module.exports = { Decision, AllDecision, ThrottleDecision, settle, failed, sfString };
