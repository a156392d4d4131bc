'use strict';
// Every command's method and RL.ALL policy builder, from the rows of the command table
// (lib/commands.generated.js): what is the same for every command (check each argument
// in order, build the call for the module or the library, append the options, queue it
// with its window and limit) is written once here; a row holds what differs.
//
// A row: { command: its COMMANDS entry, word: its RL.ALL policy word (or null),
//   args: [name, kind, min, max, optional] after the key, options / policyOptions: the
//   option tables pushOptions reads, flags such as SHADOW among them (or null), window: [rule, argument indexes...],
//   limit: the index of the argument a fail mode reports (or null), maxKeys (RL.ALL) }.

const A = require('./args');
const { Policy, countedKeys } = require('./policy');

const given = (value) => value !== undefined && value !== null;
// The option table of a command that takes none: options given to it are refused.
const NONE = Object.freeze({});

// Each argument's check and what it sends, looked up once per command, not per call.
const SENDS = {
  integer: (v) => A.integerText(v),
  // A duration goes out as the caller wrote it ("1s" stays "1s").
  duration: (v, value) => A.durationText(value),
  text: (v) => v,
};
const argumentsOf = (args) =>
  args.map(([name, kind, min, max, optional]) => ({ name, check: A[kind], send: SENDS[kind], min, max, optional: !!optional }));

// A method takes its arguments one by one, up to MOST of them (the key, the arguments,
// the options), and hands them on as they are: an array per call would be garbage.
const MOST = 8;
function nth(i, a0, a1, a2, a3, a4, a5, a6, a7) {
  switch (i) {
    case 0: return a0;
    case 1: return a1;
    case 2: return a2;
    case 3: return a3;
    case 4: return a4;
    case 5: return a5;
    case 6: return a6;
    default: return i === 7 ? a7 : undefined;
  }
}

// Checks the call's arguments from position `from` against `args` in order and writes
// what is sent for each into argv from index `at` (argv is made to size: a grown array
// costs the garbage collector); an optional argument left out sends nothing. Fills
// `checked` with the checked values (a duration's in ms): one array per command,
// reused, as a call reads it before it returns.
function putArgs(argv, at, args, from, target, checked, a0, a1, a2, a3, a4, a5, a6, a7) {
  let j = at;
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const value = nth(from + i, a0, a1, a2, a3, a4, a5, a6, a7);
    if (a.optional && !given(value)) {
      checked[i] = null;
      continue;
    }
    const v = a.check(value, target, a.name, a.min, a.max);
    checked[i] = v;
    argv[j++] = a.send(v, value);
  }
  if (j < argv.length) argv.length = j;
}

// RateLimit-Policy's w in ms (null: unknown) by the row's window rule, from the checked
// values; chosen once per command.
function windowOf([rule, a, b, c]) {
  switch (rule) {
    case 'argument':
      return (v) => v[a];
    case 'refill':
      return (v) => A.refill(v[a], v[b], v[c]);
    case 'throttle':
      return (v) => A.refill(A.plusOne(v[a]), v[b], v[c]);
    default:
      return () => null;
  }
}

// The limit a fail mode reports: CL.THROTTLE's max_burst + 1, else the row's argument.
function limitOf(row) {
  const i = row.limit;
  if (i === null) return () => null;
  return row.window[0] === 'throttle' ? (v) => A.plusOne(v[i]) : (v) => v[i];
}

// call(to, key, ...arguments, options): checks, builds and queues one call on `to`.
function caller(row) {
  const { command, options } = row;
  if (row.args.length + 2 > MOST) throw new Error(`${command.name} takes more arguments than lib/table.js hands on (MOST)`);
  if (command.counted) {
    return (to, entries, opts) => {
      const { argv, plan } = countedKeys(to._lib, command, entries, row.maxKeys);
      if (given(opts)) A.pushOptions(argv, opts, options || NONE, command.name);
      return to._queue(argv, command, plan, null, false);
    };
  }
  const args = argumentsOf(row.args);
  const window = windowOf(row.window);
  const limit = limitOf(row);
  const checked = new Array(args.length).fill(null);
  const lib = command.fn ? ['FCALL', command.fn, '1'] : null;
  return (to, a0, a1, a2, a3, a4, a5, a6, a7) => {
    const k = A.key(a0, command.name);
    const head = to._lib && lib ? 4 : 2;
    const argv = new Array(head + args.length);
    if (head === 4) {
      argv[0] = lib[0];
      argv[1] = lib[1];
      argv[2] = lib[2];
    } else {
      argv[0] = command.name;
    }
    argv[head - 1] = k;
    putArgs(argv, head, args, 1, command.name, checked, a0, a1, a2, a3, a4, a5, a6, a7);
    const opts = nth(args.length + 1, a0, a1, a2, a3, a4, a5, a6, a7);
    let shadow = false;
    if (given(opts)) {
      A.pushOptions(argv, opts, options || NONE, command.name);
      shadow = opts.shadow === true;
    }
    return to._queue(argv, command, window(checked), limit(checked), shadow);
  };
}

// policies.<name>(...arguments, options): one key's policy inside RL.ALL.
function builder(row) {
  const target = `${row.word} policy`;
  const args = argumentsOf(row.args);
  const window = windowOf(row.window);
  const limit = limitOf(row);
  const checked = new Array(args.length).fill(null);
  return function policy(a0, a1, a2, a3, a4, a5, a6, a7) {
    let argv = new Array(1 + args.length);
    argv[0] = row.word;
    putArgs(argv, 1, args, 0, target, checked, a0, a1, a2, a3, a4, a5, a6, a7);
    const opts = nth(args.length, a0, a1, a2, a3, a4, a5, a6, a7);
    let shadow = false;
    if (given(opts)) {
      // Flags such as SHADOW go before the policy's word.
      const before = [];
      A.pushOptions(argv, opts, row.policyOptions || NONE, target, before);
      if (before.length > 0) argv = before.concat(argv);
      shadow = opts.shadow === true;
    }
    return new Policy(row.word, row.command.name, argv, window(checked), limit(checked), shadow);
  };
}

// RateLimiter's methods send their call (a refused argument rejects its promise);
// Pipeline's queue it and return the pipeline.
function methodsOf(rows) {
  const limiterMethods = {};
  const pipelineMethods = {};
  const policies = {};
  for (const row of rows) {
    const call = caller(row);
    limiterMethods[row.command.method] = function send(a0, a1, a2, a3, a4, a5, a6, a7) {
      try {
        return call(this, a0, a1, a2, a3, a4, a5, a6, a7);
      } catch (err) {
        return Promise.reject(err);
      }
    };
    pipelineMethods[row.command.method] = function queue(a0, a1, a2, a3, a4, a5, a6, a7) {
      return call(this, a0, a1, a2, a3, a4, a5, a6, a7);
    };
    if (row.word) policies[row.command.policy] = builder(row);
  }
  return { limiterMethods, pipelineMethods, policies };
}

module.exports = { methodsOf };
