// Types of @rl/client (index.js, CommonJS; index.mjs re-exports the same objects).

/// <reference types="node" />

export declare const VERSION: string;

/** A Redis key: a string or the bytes of one. */
export type Key = string | Buffer;
/** A count: limit, capacity, tokens, COST ... (integers up to 2^53 - 1). */
export type Integer = number | bigint | string;
/**
 * A duration: milliseconds as a number (sent as "<n>ms"), or an RL duration string
 * ("1500ms", "60" (seconds), "60s", "1m", "24h", "1d").
 */
export type Duration = number | bigint | string;

/** COST n: units taken (0 inspects); REFUND n: units given back; DEBIT n: charged after the fact. */
export interface CostOptions {
  cost?: Integer;
  refund?: Integer;
  debit?: Integer;
}
/** RL.SLIDING takes no DEBIT. */
export interface SlidingOptions {
  cost?: Integer;
  refund?: Integer;
}
/** RL.GCRA's options: COST, REFUND or DEBIT, and DELAY max (schedule instead of reject). */
export interface GcraOptions extends CostOptions {
  delay?: Duration;
}
/** RL.PENALTY takes COST only (strikes recorded; 0 only looks). */
export interface PenaltyOptions {
  cost?: Integer;
}

export type Backend = 'module' | 'library';
export type ConnectionErrorRule = 'throw' | 'allow' | 'deny';

export interface LimiterOptions {
  /** 'auto' (default): learnt from the server once; or force one. */
  backend?: 'auto' | Backend;
  /**
   * On a connection error (no reply): 'throw' (default), 'allow' (fail open: an allowed
   * decision carrying `error`) or 'deny' (fail closed: a rejected one), or a function
   * choosing per call. RL's own error replies are always thrown.
   */
  onConnectionError?: ConnectionErrorRule | ((error: RLConnectionError, command: string) => ConnectionErrorRule);
}

/** What the headers() methods give: header name to value. */
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
  /** Set when the decision was made up after a connection error (onConnectionError allow/deny). */
  readonly error?: RLConnectionError;
  /** RateLimit-Policy, RateLimit, X-RateLimit-*, and Retry-After when rejected and a retry can pass. */
  headers(policyName?: string): RateLimitHeaders;
}

/** The five-integer reply of RL.FIXED, RL.SLIDING, ..., typed. Times in milliseconds. */
export declare class Decision {
  constructor(reply: ArrayLike<number>, window?: Duration | null);
  /** The server's reply: [allowed, limit, remaining, retry_after_ms, reset_after_ms]. */
  readonly reply: ArrayLike<number>;
  /** ms until the same call can pass; 0 when allowed (with DELAY: the wait); null when it never can. */
  readonly retryAfter: number | null;
  /** ms until the limiter is back to its initial state. */
  readonly resetAfter: number;
  toJSON(): { allowed: boolean; limit: number; remaining: number; retryAfter: number | null; resetAfter: number; window: number | null };
}
export interface Decision extends FiveIntegers {}

/** RL.ALL: the combined decision, and each key's (decisions[i] for keys[i]). */
export declare class AllDecision extends Decision {
  readonly keys: Key[];
  readonly decisions: Decision[];
}

/** CL.THROTTLE's reply (redis-cell's form): times in whole seconds. */
export declare class ThrottleDecision {
  constructor(reply: ArrayLike<number>, period?: Duration | null);
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
  readonly args: Array<string | Buffer>;
  /** RateLimit-Policy's w in ms, when known: the window or ttl; a bucket's time to refill from empty. */
  readonly window: number | null;
}

export declare const policies: {
  fixed(limit: Integer, window: Duration): Policy;
  sliding(limit: Integer, window: Duration): Policy;
  slidingCounter(limit: Integer, window: Duration): Policy;
  bucket(capacity: Integer, tokens: Integer, period: Duration): Policy;
  gcra(capacity: Integer, tokens: Integer, period: Duration, opts?: { delay?: Duration }): Policy;
  acquire(limit: Integer, ttl: Duration, id: string | Buffer): Policy;
  /** In RL.ALL a PENALTY policy only looks (the call needs { cost: 0 }). */
  penalty(strikes: Integer, window: Duration, block: Duration, max: Duration): Policy;
  share(tenant: string | Buffer, weight: Integer, capacity: Integer, tokens: Integer, period: Duration): Policy;
};

export type AllEntry = readonly [Key, Policy] | { key: Key; policy: Policy };

/** A batch's outcome: replies[i] for command i, or errors[i] when it failed (errors null: none did). */
export interface BatchResult {
  replies: unknown[];
  errors: unknown[] | null;
}

/** Sends argument arrays through a client; one exists for node-redis and ioredis. */
export interface Adapter {
  readonly kind?: string;
  call(args: Array<string | Buffer>): Promise<unknown>;
  /** Every command in one round trip where the client can. */
  batch(commands: Array<Array<string | Buffer>>): Promise<BatchResult>;
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

/** Milliseconds of a duration (number or "1m"), or null when it is not one. */
export declare function durationMs(value: Duration): number | null;

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

/**
 * Every RL command, as RateLimiter and Pipeline have them. What a call returns: `D` for a
 * decision, `A` for RL.ALL's, `T` for CL.THROTTLE's, `B` for RL.RELEASE's boolean.
 */
export interface Commands<D, A, T, B> {
  /** RL.FIXED key limit window [COST n | REFUND n | DEBIT n] */
  fixed(key: Key, limit: Integer, window: Duration, opts?: CostOptions): D;
  /** RL.SLIDING key limit window [COST n | REFUND n] */
  sliding(key: Key, limit: Integer, window: Duration, opts?: SlidingOptions): D;
  /** RL.SLIDINGCOUNTER key limit window [COST n | REFUND n | DEBIT n] */
  slidingCounter(key: Key, limit: Integer, window: Duration, opts?: CostOptions): D;
  /** RL.BUCKET key capacity tokens period [COST n | REFUND n | DEBIT n] */
  bucket(key: Key, capacity: Integer, tokens: Integer, period: Duration, opts?: CostOptions): D;
  /** RL.GCRA key capacity tokens period [COST n | REFUND n | DEBIT n] [DELAY max] */
  gcra(key: Key, capacity: Integer, tokens: Integer, period: Duration, opts?: GcraOptions): D;
  /** CL.THROTTLE key max_burst count period [quantity]: the module only (RLUnsupportedError on the library). */
  throttle(key: Key, maxBurst: Integer, count: Integer, period: Duration, quantity?: Integer): T;
  /** RL.ALL: every [key, policy] all or nothing. */
  all(entries: readonly AllEntry[], opts?: CostOptions): A;
  /** RL.ACQUIRE key limit ttl id */
  acquire(key: Key, limit: Integer, ttl: Duration, id: string | Buffer): D;
  /** RL.RELEASE key id: true if the lease was held and is now released. */
  release(key: Key, id: string | Buffer): B;
  /** RL.PENALTY key strikes window block max [COST n] */
  penalty(key: Key, strikes: Integer, window: Duration, block: Duration, max: Duration, opts?: PenaltyOptions): D;
  /** RL.SHARE key tenant weight capacity tokens period [COST n | REFUND n | DEBIT n] */
  share(
    key: Key,
    tenant: string | Buffer,
    weight: Integer,
    capacity: Integer,
    tokens: Integer,
    period: Duration,
    opts?: CostOptions,
  ): D;
}

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
  /** 'module' or 'library', learnt on first use and cached (or forced). */
  backend(): Promise<Backend>;
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
/** ERR: a bad argument, option or arity, or a key RL did not write. Nothing changed. */
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
/** withLease(): not granted; `decision` says when to retry. */
export declare class RLLeaseRejectedError extends RLError {
  constructor(decision: Decision, key: Key);
  readonly decision: Decision;
}
