'use strict';
// The arguments of a call, checked before anything is sent: the kinds and ranges come
// from the command table (commands.generated.js passes them in); a refused argument is an
// RLArgumentError. Numbers go out as strings (node-redis takes only strings and Buffers).

const { refuse } = require('./classify');

// ---------------------------------------------------------------------------
// Integers: a whole number (number, bigint or decimal string) inside [min, max]; never a
// float, NaN, infinity or a boolean.

const INTEGER_RE = /^-?[0-9]+$/;

const describe = (value) => (typeof value === 'string' ? JSON.stringify(value) : typeof value === 'bigint' ? `${value}n` : String(value));

/** The integer `value` as a number (a bigint beyond 2^53 - 1), or an RLArgumentError. */
function integer(value, command, name, min, max) {
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value) && value >= min && value <= max) return value;
  } else if (typeof value === 'bigint') {
    if (value >= BigInt(min) && value <= BigInt(max)) return Number.isSafeInteger(Number(value)) ? Number(value) : value;
  } else if (typeof value === 'string' && INTEGER_RE.test(value)) {
    return integer(value.length < 16 ? Number(value) : BigInt(value), command, name, min, max);
  }
  throw refuse(command, `${name} must be an integer from ${min} to ${max}, not ${describe(value)}`);
}

// A direct-mapped cache of the decimal text of small numbers: the same few limits come
// again and again.
const SLOTS = 256;
const cachedNumbers = new Array(SLOTS).fill(-1);
const cachedTexts = new Array(SLOTS).fill('');

/** The decimal text of a checked integer. */
function integerText(n) {
  if (typeof n !== 'number') return String(n);
  const slot = n & (SLOTS - 1);
  if (cachedNumbers[slot] === n) return cachedTexts[slot];
  const s = String(n);
  cachedNumbers[slot] = n;
  cachedTexts[slot] = s;
  return s;
}

// ---------------------------------------------------------------------------
// Durations, read as the server reads them: a bare integer is seconds (60 = one minute),
// a string is `<integer>[ms|s|m|h|d]` (case-insensitive). A whole number of
// milliseconds inside [min, max]: '1.5ms' or '1ns' is refused, never rounded.

const UNIT_MS = { '': 1000, ms: 1, s: 1000, m: 60000, h: 3600000, d: 86400000 };
const DURATION_RE = /^([0-9]+)(ms|s|m|h|d)?$/i;
const parsed = new Map();

/** Milliseconds of a duration in the server's syntax, or null when it is not one. */
function durationMs(value) {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value * 1000 : null;
  if (typeof value === 'bigint') return value >= 0n && value <= 9007199254740n ? Number(value) * 1000 : null;
  if (typeof value !== 'string') return null;
  let ms = parsed.get(value);
  if (ms === undefined) {
    const m = DURATION_RE.exec(value);
    ms = m === null ? null : Number(m[1]) * UNIT_MS[(m[2] || '').toLowerCase()];
    if (ms !== null && !Number.isSafeInteger(ms)) ms = null;
    if (parsed.size < 1024) parsed.set(value, ms);
  }
  return ms;
}

/** The milliseconds of duration `value`, or an RLArgumentError. */
function duration(value, command, name, min, max) {
  const ms = durationMs(value);
  if (ms !== null && ms >= min && ms <= max) return ms;
  throw refuse(
    command,
    `${name} must be a duration from ${min} ms to ${max} ms: whole seconds as a number, or a string such as ` +
      `"1500ms", "90", "1m", "24h", not ${describe(value)}`,
  );
}

/** What to send for a checked duration: a string as given, a number (seconds) as its digits. */
const durationText = (value) => (typeof value === 'string' ? value : integerText(typeof value === 'bigint' ? Number(value) : value));

/** A duration of `n` milliseconds in the server's syntax: ms(1500) is "1500ms". */
function ms(n) {
  integer(n, 'ms()', 'a duration in milliseconds', 0, Number.MAX_SAFE_INTEGER);
  return `${n}ms`;
}

// ---------------------------------------------------------------------------
// Text (a lease id, a tenant) and keys.

/** A string or Buffer of min to max bytes, or an RLArgumentError. */
function text(value, command, name, min, max) {
  let bytes = -1;
  if (typeof value === 'string') {
    // A string's byte length lies between its length and three times it.
    bytes = value.length >= min && value.length * 3 <= max ? min : Buffer.byteLength(value);
  } else if (Buffer.isBuffer(value)) {
    bytes = value.length;
  }
  if (bytes >= min && bytes <= max) return value;
  throw refuse(command, `${name} must be a string or Buffer of ${min} to ${max} bytes, not ${bytes < 0 ? describe(value) : `${bytes} bytes`}`);
}

function key(value, command) {
  if (typeof value === 'string' || Buffer.isBuffer(value)) return value;
  throw refuse(command, `a key must be a string or a Buffer, not ${describe(value)}`);
}

// ---------------------------------------------------------------------------
// Options: `{ cost: 2 }`, each at most once (an object has each name once), none
// that another excludes (COST, REFUND and DEBIT). A flag (`{ shadow: true }`) is a
// boolean: true sends its word, false sends nothing.

const CHECKS = {
  integer: (v, c, n, min, max) => integerText(integer(v, c, n, min, max)),
  duration: (v, c, n, min, max) => (duration(v, c, n, min, max), durationText(v)),
  text,
};

function flag(value, command, name) {
  if (value === true || value === false) return value;
  throw refuse(command, `${name} must be true or false, not ${describe(value)}`);
}

/**
 * Appends `options` to argv. `table`: each option's parameter name to [word, kind, min,
 * max, the names it excludes, true when written before an RL.ALL policy's word] (from
 * the command table); those written before go to `before`.
 */
function pushOptions(argv, options, table, command, before = argv) {
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw refuse(command, `options must be an object such as { ${Object.keys(table)[0] || 'cost'}: 1 }, not ${describe(options)}`);
  }
  for (const name of Object.keys(options)) {
    const value = options[name];
    if (value === undefined) continue;
    const spec = Object.prototype.hasOwnProperty.call(table, name) ? table[name] : undefined;
    if (spec === undefined) {
      const takes = Object.keys(table);
      throw refuse(command, `unknown option '${name}': ${command} takes ${takes.length ? takes.join(', ') : 'no options'}`);
    }
    const [word, kind, min, max, excludes, first] = spec;
    for (const other of excludes) {
      if (options[other] !== undefined) throw refuse(command, `options ${name} and ${other} exclude each other`);
    }
    if (kind === 'flag') {
      if (flag(value, command, name)) (first ? before : argv).push(word);
    } else {
      argv.push(word, CHECKS[kind](value, command, name, min, max));
    }
  }
  return argv;
}

// ---------------------------------------------------------------------------
// RateLimit-Policy's w of a bucket.

// The longest refill time reported (ms, about 292 years); the same in every RL client.
const MAX_REFILL_MS = 9223372036854;

/**
 * A bucket of `capacity` regaining `tokens` per `periodMs` (checked integers): the time it
 * takes to refill from empty, ceil(capacity * period / tokens) ms, at most MAX_REFILL_MS,
 * so that q=capacity per it never advertises more than the sustained rate.
 */
function refill(capacity, tokens, periodMs) {
  if (typeof capacity === 'number' && typeof tokens === 'number') {
    const cp = capacity * periodMs;
    if (Number.isSafeInteger(cp)) {
      const r = cp % tokens;
      return Math.min((cp - r) / tokens + (r > 0 ? 1 : 0), MAX_REFILL_MS);
    }
  }
  const c = BigInt(capacity);
  const t = BigInt(tokens);
  const w = (c * BigInt(periodMs) + t - 1n) / t;
  return w > BigInt(MAX_REFILL_MS) ? MAX_REFILL_MS : Number(w);
}

/** n + 1 for a checked integer (CL.THROTTLE's capacity is max_burst + 1). */
const plusOne = (n) => (typeof n === 'number' && n < Number.MAX_SAFE_INTEGER ? n + 1 : BigInt(n) + 1n);

module.exports = { integer, integerText, duration, durationText, durationMs, ms, text, key, pushOptions, refill, plusOne };
