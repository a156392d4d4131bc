'use strict';
// Every command's method and RL.ALL policy builder, from the rows of the command table
// (lib/commands.generated.js): what is the same for every command (check each argument
// in order, build the call for the module or the library, append the options, queue it
// with its window and limit) is written once here; a row holds what differs.
//
// A row: { command: its COMMANDS entry, word: its RL.ALL policy word (or null),
//   args: [name, kind, min, max, optional] after the key, options / policyOptions: the
//   option tables pushOptions reads (or null), window: [rule, argument indexes...],
//   limit: the index of the argument a fail mode reports (or null), maxKeys (RL.ALL) }.

const A = require('./args');
const { Policy, countedKeys } = require('./policy');

const given = (value) => value !== undefined && value !== null;

// Each argument's check and what it sends, looked up once per command, not per call.
const SENDS = {
  integer: (v) => A.integerText(v),
  // A duration goes out as the caller wrote it ("1s" stays "1s").
  duration: (v, value) => A.durationText(value),
  text: (v) => v,
};
const argumentsOf = (args) =>
  args.map(([name, kind, min, max, optional]) => ({ name, check: A[kind], send: SENDS[kind], min, max, optional: !!optional }));

// Checks `values` (from index `from`) against `args` in order and appends what is sent
// for each; an optional argument left out sends nothing. Returns the checked values (a
// duration's in ms).
function pushArgs(argv, args, values, from, target) {
  const checked = new Array(args.length);
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    const value = values[from + i];
    if (a.optional && !given(value)) continue;
    const v = a.check(value, target, a.name, a.min, a.max);
    checked[i] = v;
    argv.push(a.send(v, value));
  }
  return checked;
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

// call(to, [key, ...arguments, options]): checks, builds and queues one call on `to`.
function caller(row) {
  const { command, options } = row;
  if (command.counted) {
    return (to, [entries, opts]) => {
      const { argv, plan } = countedKeys(to._lib, command, entries, row.maxKeys);
      if (options && given(opts)) A.pushOptions(argv, opts, options, command.name);
      return to._queue(argv, command, plan, null);
    };
  }
  const args = argumentsOf(row.args);
  const window = windowOf(row.window);
  const limit = limitOf(row);
  return (to, a) => {
    const k = A.key(a[0], command.name);
    const argv = to._lib && command.fn ? ['FCALL', command.fn, '1', k] : [command.name, k];
    const v = pushArgs(argv, args, a, 1, command.name);
    const opts = a[args.length + 1];
    if (options && given(opts)) A.pushOptions(argv, opts, options, command.name);
    return to._queue(argv, command, window(v), limit(v));
  };
}

// policies.<name>(...arguments, options): one key's policy inside RL.ALL.
function builder(row) {
  const target = `${row.word} policy`;
  const args = argumentsOf(row.args);
  const window = windowOf(row.window);
  const limit = limitOf(row);
  return function policy(...a) {
    const argv = [row.word];
    const v = pushArgs(argv, args, a, 0, target);
    const opts = a[row.args.length];
    if (row.policyOptions && given(opts)) A.pushOptions(argv, opts, row.policyOptions, target);
    return new Policy(row.word, row.command.name, argv, window(v), limit(v));
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
    limiterMethods[row.command.method] = function send(...a) {
      try {
        return call(this, a);
      } catch (err) {
        return Promise.reject(err);
      }
    };
    pipelineMethods[row.command.method] = function queue(...a) {
      return call(this, a);
    };
    if (row.word) policies[row.command.policy] = builder(row);
  }
  return { limiterMethods, pipelineMethods, policies };
}

module.exports = { methodsOf };
