'use strict';
// RL.ALL's policies (built by `policies.*`, generated from the command table) and the
// [key, policy] entries of a call.

const { refuse } = require('./classify');
const { key, integerText } = require('./args');

class Policy {
  /**
   * word: the policy's word (GCRA); command: its command (RL.GCRA); args: what the call
   * sends for it, its flags (SHADOW) and word first; window: RateLimit-Policy's w in ms
   * (null when unknown); limit: the q of RateLimit-Policy, which a fail mode reports;
   * shadow: tried, not enforced (SHADOW): it never vetoes the call.
   */
  constructor(word, command, args, window, limit, shadow = false) {
    this.word = word;
    this.command = command;
    this.args = args;
    this.window = window;
    this.limit = limit;
    this.shadow = shadow;
  }
}

/**
 * The arguments of a call on several keys (`numkeys key... policy...`) from its entries,
 * [key, policy] or { key, policy }, and its reply's plan.
 */
function countedKeys(lib, command, entries, maxKeys) {
  if (!Array.isArray(entries) || entries.length < 1 || entries.length > maxKeys) {
    throw refuse(command.name, `entries must be an array of 1 to ${maxKeys} [key, policy] pairs`);
  }
  const keys = new Array(entries.length);
  const policies = new Array(entries.length);
  const words = [];
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i];
    const [k, policy] = Array.isArray(entry) ? entry : entry !== null && typeof entry === 'object' ? [entry.key, entry.policy] : [];
    if (!(policy instanceof Policy)) {
      throw refuse(command.name, `entry ${i} must be [key, policy] with a policy from policies.*`);
    }
    keys[i] = key(k, command.name);
    policies[i] = policy;
    for (const a of policy.args) words.push(a);
  }
  const n = integerText(keys.length);
  const argv = lib ? ['FCALL', command.fn, n, ...keys, ...words] : [command.name, n, ...keys, ...words];
  return { argv, plan: { keys, policies } };
}

module.exports = { Policy, countedKeys };
