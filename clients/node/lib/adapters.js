'use strict';
// Adapters: one per client library; each sends argument arrays through the user's client.
// call(args) resolves to the reply; batch(commands) to { replies, errors }: replies[i] is
// command i's reply, and errors, when not null, holds at i the error command i got
// instead. The deadline is the limiter's (limiter.js), not the client's.

const { refuse } = require('./classify');

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
    if (this.cluster) return settleAll(commands.map((args) => this.client.call(...args)));
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
    return settleAll(promises);
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
    return settleAll(commands.map((args) => this.client.sendCommand(firstKey(args), false, args)));
  }
}

// { replies, errors } of promises: all of them at once, and only when one fails, each.
function settleAll(promises) {
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
  throw refuse(
    'createLimiter',
    'expected a node-redis client or cluster (createClient / createCluster), ' +
      'an ioredis Redis or Cluster, or an adapter { call(args), batch(commands) }',
  );
}

module.exports = { IORedisAdapter, NodeRedisAdapter, NodeRedisClusterAdapter, adapterFor };
