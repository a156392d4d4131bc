'use strict';
// @rl/client: typed calls to RL (the Redis rate-limit module, or its Functions library)
// through the application's own node-redis (v4+) or ioredis (v5+) client.
//
//   const rl = createLimiter(redis);            // node-redis client/cluster or ioredis
//   const d = await rl.gcra('rl:api:ada', 20, 100, '1m');
//   if (!d.allowed) { res.set(d.headers()); return res.sendStatus(429); }
//
// Which backend the server has (the module's RL.* commands, or `FCALL rl_*` of the
// library) is learnt by the first call, and learnt again when the server answers that a
// command does not exist. Nothing here opens a connection.
//
// lib/commands.generated.js (written by `make clients` from commands.json) has each
// command's method, the RL.ALL policies and the argument checks; the rest is lib/*.js
// (lib/express.js and lib/fastify.js: stores for express-rate-limit and @fastify/rate-limit).

const { RateLimiter, Pipeline, Lease, createLimiter, policies } = require('./lib/limiter');
const { Decision, AllDecision, ThrottleDecision } = require('./lib/decisions');
const { Policy } = require('./lib/policy');
const { adapterFor, IORedisAdapter, NodeRedisAdapter, NodeRedisClusterAdapter } = require('./lib/adapters');
const { durationMs, ms } = require('./lib/args');
const { RLStore } = require('./lib/express');
const { fastifyStore } = require('./lib/fastify');

const VERSION = '0.2.0';

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
  ms,
  RLStore,
  fastifyStore,
  ...require('./lib/errors'),
};
