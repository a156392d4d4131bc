// Types of @rl/client (index.js, CommonJS; index.mjs re-exports the same objects).

/// <reference types="node" />

export declare const VERSION: string;

/** A Redis key: a string or the bytes of one. */
export type Key = string | Buffer;
/** A count: limit, capacity, tokens, COST ... (integers up to 2^53 - 1). */
export type Integer = number | bigint | string;
/**
 * A duration, read as the server reads it: a whole number of seconds (60), or a string
 * in the server's syntax ("1500ms", "60", "60s", "1m", "24h", "1d"; `ms(1500)` writes
 * "1500ms"). A whole number of milliseconds: "1.5ms" is refused, never rounded.
 */
export type Duration = number | bigint | string;
/** A lease id or a tenant: a string or its bytes. */
export type Text = string | Buffer;

import type { Commands, Policies, AllOptions } from './commands.generated';
export * from './commands.generated';
/** COST n, REFUND n or DEBIT n: the options every amount-taking command has (RL.ALL's). */
export type CostOptions = AllOptions;

export type Backend = 'module' | 'library';
/** 'throw' (or 'raise', the same): raise the error; 'allow': fail open; 'deny': fail closed. */
export type ConnectionErrorRule = 'throw' | 'raise' | 'allow' | 'deny';

export interface LimiterOptions {
  /** 'auto' (default): learnt by the first call, and again when a command turns out missing; or force one. */
  backend?: 'auto' | Backend;
  /** Each call's deadline in ms (default 100): no reply by then is an RLTimeoutError. No retry inside it. */
  timeout?: number;
  /**
   * On a connection error (no reply, or none within `timeout`): 'throw' (default),
   * 'allow' (fail open: allowed, remaining = limit, retryAfter = resetAfter = 0) or 'deny'
   * (fail closed: rejected, remaining 0, retryAfter = resetAfter = 1000 ms), each carrying
   * `error`; or a function choosing per call. RL's own error replies are always thrown.
   */
  onConnectionError?: ConnectionErrorRule | ((error: RLConnectionError, command: string) => ConnectionErrorRule);
  /**
   * How many blocked keys to remember (default 0: no cache). After a rejection, the same
   * fixed/sliding/bucket/gcra/slidingCounter call at the same or a larger cost is rejected
   * locally (`cached` true) until min(retryAfter, cacheMax) has passed.
   */
  cacheSize?: number;
  /** The longest a rejection is cached, in ms (default 1000). */
  cacheMax?: number;
  /**
   * How many app instances share the limits (default 0: no fallback). While the server does
   * not answer, those calls are decided by an in-process GCRA at limit / fallbackInstances
   * per window (carrying `error`), instead of onConnectionError.
   */
  fallbackInstances?: number;
  /** While falling back, the server is tried at most this often, in ms (default 500). */
  probeEvery?: number;
}

/**
 * What the headers() methods give: header name to value. A shadow decision (and an RL.ALL
 * decision whose policies are all shadow ones) gives none: `{}`.
 */
export interface RateLimitHeaders {
  'RateLimit-Policy': string;
  RateLimit: string;
  'X-RateLimit-Limit': string;
  'X-RateLimit-Remaining': string;
  'X-RateLimit-Reset': string;
  'Retry-After'?: string;
  [name: string]: string | undefined;
}

/** What Decision and ThrottleDecision share: a typed five-integer reply. */
export interface FiveIntegers {
  readonly allowed: boolean;
  readonly limit: number;
  readonly remaining: number;
  /**
   * RateLimit-Policy's w in ms, when known: the call's window (or RL.ACQUIRE's ttl); for a
   * bucket (bucket, gcra, share, throttle), the time it takes to refill from empty,
   * ceil(capacity * period / tokens) (throttle: capacity maxBurst + 1, tokens count).
   */
  readonly window: number | null;
  /** Set when the decision was made up after a connection error (onConnectionError allow/deny, or the fallback limiter). */
  readonly error?: RLConnectionError;
  /**
   * RateLimit-Policy and RateLimit named `policyName` (default "default"; printable ASCII,
   * else an RLArgumentError), X-RateLimit-*, and Retry-After when rejected and a retry can pass.
   */
  headers(policyName?: string): RateLimitHeaders;
}

/** The five-integer reply of RL.FIXED, RL.SLIDING, ..., typed. Times in milliseconds. */
export declare class Decision {
  constructor(reply: ArrayLike<number>, window?: number | null);
  /** The server's reply: [allowed, limit, remaining, retry_after_ms, reset_after_ms]. */
  readonly reply: ArrayLike<number>;
  /** ms until the same call can pass; 0 when allowed (with DELAY: the wait); null when it never can. */
  readonly retryAfter: number | null;
  /** ms until the limiter is back to its initial state. */
  readonly resetAfter: number;
  /** True on a rejection given by the cache of blocked keys (cacheSize) without asking the server. */
  readonly cached: boolean;
  /**
   * True when the call (in RL.ALL: the policy) was a shadow one (`{ shadow: true }`): the
   * limit was tried, not enforced, so not `allowed` means "would have rejected". Its
   * headers() are empty. An RL.ALL combined decision is the enforced policies' (false).
   */
  readonly shadow: boolean;
  toJSON(): { allowed: boolean; limit: number; remaining: number; retryAfter: number | null; resetAfter: number; window: number | null; shadow: boolean };
}
export interface Decision extends FiveIntegers {}

/** RL.ALL: the combined decision, and each key's (decisions[i] for keys[i] and policies[i]). */
export declare class AllDecision extends Decision {
  readonly keys: Key[];
  readonly policies: Policy[];
  readonly decisions: Decision[];
  /** Each policy's name: names[i], else its word in lower case ("gcra"), with -N (its position) when the word repeats. */
  policyNames(names?: readonly string[]): string[];
  /**
   * One RateLimit-Policy and RateLimit member per enforced policy, each with its own key's
   * numbers and named by its place among all the call's policies; `{}` when all are shadow.
   */
  headers(names?: readonly string[]): RateLimitHeaders;
}

/** CL.THROTTLE's reply (redis-cell's form): times in whole seconds. */
export declare class ThrottleDecision {
  constructor(reply: ArrayLike<number>, window?: number | null);
  /** The server's reply: [limited, limit, remaining, retry_after_s, reset_after_s]. */
  readonly reply: ArrayLike<number>;
  readonly limited: boolean;
  /** Seconds until a retry can pass; null when allowed, or when it never can. */
  readonly retryAfterSeconds: number | null;
  readonly resetAfterSeconds: number;
}
export interface ThrottleDecision extends FiveIntegers {}

/** One RL.ALL policy, built by `policies.*`. */
export declare class Policy {
  readonly word: string;
  readonly command: string;
  /** What the call sends for it, its flags (SHADOW) and word first. */
  readonly args: Array<string | Buffer>;
  /** Tried, not enforced (`{ shadow: true }`): it never vetoes the call. */
  readonly shadow: boolean;
  /** RateLimit-Policy's w in ms, when known: the window or ttl; a bucket's time to refill from empty. */
  readonly window: number | null;
  /** RateLimit-Policy's q, which a fail mode's decision reports. */
  readonly limit: number | bigint | null;
}

export declare const policies: Policies;

export type AllEntry = readonly [Key, Policy] | { key: Key; policy: Policy };

/** A batch's outcome: replies[i] for command i, or errors[i] when it failed (errors null: none did). */
export interface BatchResult {
  replies: unknown[];
  errors: unknown[] | null;
}

/** Sends argument arrays through a client; one exists for node-redis and ioredis. */
export interface Adapter {
  readonly kind?: string;
  /** timeout: the call's deadline in ms, for a client that can drop a command not yet written by then. */
  call(args: Array<string | Buffer>, timeout?: number): Promise<unknown>;
  /** Every command in one round trip where the client can. */
  batch(commands: Array<Array<string | Buffer>>, timeout?: number): Promise<BatchResult>;
}

/** Anything createLimiter accepts: a node-redis client/cluster, an ioredis Redis/Cluster, an Adapter. */
export type RedisLike =
  | { sendCommand(...args: any[]): Promise<any> }
  | { call(...args: any[]): Promise<any>; pipeline(...args: any[]): any }
  | Adapter;

export declare class IORedisAdapter implements Adapter {
  constructor(client: { call(...args: any[]): Promise<any>; pipeline(...args: any[]): any });
  readonly kind: string;
  call(args: Array<string | Buffer>): Promise<unknown>;
  batch(commands: Array<Array<string | Buffer>>): Promise<BatchResult>;
}
export declare class NodeRedisAdapter implements Adapter {
  constructor(client: { sendCommand(...args: any[]): Promise<any> });
  readonly kind: string;
  call(args: Array<string | Buffer>): Promise<unknown>;
  batch(commands: Array<Array<string | Buffer>>): Promise<BatchResult>;
}
export declare class NodeRedisClusterAdapter extends NodeRedisAdapter {}
export declare function adapterFor(client: RedisLike): Adapter;

/** Milliseconds of a duration (seconds as a number, or "1m"), or null when it is not one. */
export declare function durationMs(value: Duration): number | null;
/** A duration of n milliseconds in the server's syntax: ms(1500) is "1500ms". */
export declare function ms(n: number): string;

/** A lease from RateLimiter.lease(): released once, by release() or `await using`. */
export declare class Lease {
  readonly key: Key;
  readonly id: string | Buffer;
  readonly decision: Decision;
  readonly acquired: boolean;
  /** RL.RELEASE, once: true if this call released the lease. */
  release(): Promise<boolean>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A result slot of Pipeline.exec(): the call's result, or the error it got. */
export type Settled<T> = T | RLError;

/** Queued calls, sent in one round trip by exec(). */
export declare class Pipeline<R extends unknown[] = []> {
  readonly length: number;
  /** One result per queued call, in order: its decision, or the RLError it got. */
  exec(): Promise<{ [K in keyof R]: Settled<R[K]> }>;
}
export interface Pipeline<R extends unknown[] = []>
  extends Commands<
    Pipeline<[...R, Decision]>,
    Pipeline<[...R, AllDecision]>,
    Pipeline<[...R, ThrottleDecision]>,
    Pipeline<[...R, boolean]>
  > {}

export declare class RateLimiter {
  constructor(client: RedisLike, options?: LimiterOptions);
  readonly adapter: Adapter;
  /** Each call's deadline in ms. */
  readonly timeout: number;
  /** 'module' or 'library', learnt on first use (and again when a command turns out missing), or forced. */
  backend(): Promise<Backend>;
  /** Asks the server which backend it has, every time. */
  detect(): Promise<Backend>;
  /** Whether the server's RL has `command`, e.g. 'RL.SHARE'. */
  supports(command: string): Promise<boolean>;
  pipeline(): Pipeline<[]>;

  /** RL.ACQUIRE as a Lease (id: a random UUID when omitted). */
  lease(key: Key, limit: Integer, ttl: Duration, id?: string | Buffer | null): Promise<Lease>;
  /** Runs fn holding a lease and releases it in finally; RLLeaseRejectedError when not granted. */
  withLease<T>(
    key: Key,
    limit: Integer,
    ttl: Duration,
    id: string | Buffer | null | undefined,
    fn: (lease: Lease) => T | Promise<T>,
  ): Promise<T>;
}

export interface RateLimiter
  extends Commands<Promise<Decision>, Promise<AllDecision>, Promise<ThrottleDecision>, Promise<boolean>> {}

export declare function createLimiter(client: RedisLike, options?: LimiterOptions): RateLimiter;

/** Options of RLStore and fastifyStore; backend and timeout are createLimiter's. */
export interface StoreOptions {
  /** Put before every key (default 'rl:express:', 'rl:fastify:'): one per rate limiter. */
  prefix?: string;
  backend?: 'auto' | Backend;
  timeout?: number;
}

/** A key's hits in its window and when they go back to 0 (express-rate-limit's ClientRateLimitInfo). */
export interface ClientHits {
  totalHits: number;
  resetTime: Date | undefined;
}

/**
 * An express-rate-limit store over RL.FIXED: `rateLimit({ store: new RLStore(redis) })`.
 * Every hit is counted, atomically, in a window aligned to the epoch on the server's clock;
 * resetTime is its exact end. Store errors are express-rate-limit's (passOnStoreError).
 */
export declare class RLStore {
  constructor(client: RedisLike | RateLimiter, options?: StoreOptions);
  readonly prefix: string;
  readonly localKeys: false;
  /** From express-rate-limit's options, by init(). */
  windowMs: number | undefined;
  init(options: { windowMs: number }): void;
  increment(key: string): Promise<ClientHits & { resetTime: Date }>;
  decrement(key: string): Promise<void>;
  /** undefined when the key has no hits. */
  get(key: string): Promise<ClientHits | undefined>;
  resetKey(key: string): Promise<void>;
}

/** What a @fastify/rate-limit store answers: the hits, and ms until they go back to 0. */
export type FastifyStoreCallback = (error: Error | null, result?: { current: number; ttl: number }) => void;
/** A @fastify/rate-limit store over RL.FIXED, as fastifyStore() builds it. */
export interface RLFastifyStore {
  readonly prefix: string;
  incr(key: string, callback: FastifyStoreCallback, timeWindow: number, max?: number): void;
  read(key: string, callback: FastifyStoreCallback, timeWindow: number, max?: number): void;
  /** The store of a route with a limit of its own: the plugin passes the route options (with routeInfo). */
  child(routeOptions: object): RLFastifyStore;
}
/**
 * A store class for @fastify/rate-limit over `client`: `register(rateLimit, { store:
 * fastifyStore(redis) })`. continueExceeding and exponentialBackoff are refused.
 */
export declare function fastifyStore(
  client: RedisLike | RateLimiter,
  options?: StoreOptions,
): new (options?: { continueExceeding?: boolean; exponentialBackoff?: boolean }) => RLFastifyStore;

export interface RLErrorOptions {
  cause?: unknown;
  code?: string;
  command?: string;
}
/** Every error this package raises. */
export declare class RLError extends Error {
  constructor(message: string, options?: RLErrorOptions);
  /** The server's code word (ERR, WRONGTYPE, OOM, NOPERM, ...), when the server answered. */
  readonly code?: string;
  readonly command?: string;
}
export declare class RLServerError extends RLError {}
/** A bad argument, refused before anything is sent (no code), or by the server (ERR). Nothing changed. */
export declare class RLArgumentError extends RLServerError {}
/** WRONGTYPE: the key holds another type. Nothing changed. */
export declare class RLWrongTypeError extends RLServerError {}
/** OOM: the server is at maxmemory. */
export declare class RLOutOfMemoryError extends RLServerError {}
/** Neither the RL module nor the Functions library is on the server; says how to load one. */
export declare class RLNotLoadedError extends RLError {}
/** The backend has no such command (CL.THROTTLE on the library). */
export declare class RLUnsupportedError extends RLError {}
/** No reply from Redis. */
export declare class RLConnectionError extends RLError {}
/** No reply within the call's deadline. */
export declare class RLTimeoutError extends RLConnectionError {}
/** withLease(): not granted; `decision` says when to retry. */
export declare class RLLeaseRejectedError extends RLError {
  constructor(decision: Decision, key: Key);
  readonly decision: Decision;
}
