package rl

import (
	"context"
	"time"
)

// The calls, built for Client and Pipeline alike into a call the caller
// allocated and k.init'ed.

func (k *call) windowed(key string, limit int64, window time.Duration, opts []Option) *call {
	k.window, k.limit = window, limit
	k.add(key)
	k.int(limit)
	k.dur("window", window)
	k.options(opts)
	return k
}

func (k *call) bucket(key string, capacity, tokens int64, period time.Duration, opts []Option) *call {
	k.window, k.limit = refillWindow(capacity, tokens, period), capacity
	k.add(key)
	k.int(capacity)
	k.int(tokens)
	k.dur("period", period)
	k.options(opts)
	return k
}

func (k *call) throttle(key string, maxBurst, count int64, period time.Duration, quantity int64) *call {
	k.window, k.limit = refillWindow(maxBurst+1, count, period), maxBurst+1
	k.add(key)
	k.int(maxBurst)
	k.int(count)
	k.dur("period", period)
	k.int(quantity)
	return k
}

func (k *call) all(checks []KeyPolicy, opts []Option) *call {
	k.numkeys = len(checks)
	k.windows = make([]time.Duration, len(checks))
	for i, c := range checks {
		k.add(c.Key)
		k.windows[i] = c.Policy.window
		if c.Policy.err != nil && k.err == nil {
			k.err = c.Policy.err
		}
	}
	if len(checks) > 0 {
		k.window, k.limit = checks[0].Policy.window, checks[0].Policy.limit
	}
	for _, c := range checks {
		k.add(c.Policy.wordV)
		k.add(c.Policy.args...)
	}
	k.options(opts)
	return k
}

func (k *call) acquire(key string, limit int64, ttl time.Duration, id string) *call {
	k.window, k.limit = ttl, limit
	k.add(key)
	k.int(limit)
	k.dur("ttl", ttl)
	k.add(id)
	return k
}

func (k *call) release(key, id string) *call {
	k.add(key, id)
	return k
}

func (k *call) penalty(key string, strikes int64, window, block, max time.Duration, opts []Option) *call {
	k.window, k.limit = window, strikes
	k.add(key)
	k.int(strikes)
	k.dur("window", window)
	k.dur("block", block)
	k.dur("max", max)
	k.options(opts)
	return k
}

func (k *call) share(key, tenant string, weight, capacity, tokens int64, period time.Duration, opts []Option) *call {
	k.window, k.limit = refillWindow(capacity, tokens, period), capacity
	k.add(key, tenant)
	k.int(weight)
	k.int(capacity)
	k.int(tokens)
	k.dur("period", period)
	k.options(opts)
	return k
}

// Fixed is RL.FIXED key limit window: a fixed window counter, windows aligned
// to the Unix epoch. Options: Cost, Refund, Debit.
func (c *Client) Fixed(ctx context.Context, key string, limit int64, window time.Duration, opts ...Option) (Decision, error) {
	return c.decide(ctx, one(cmdFixed).windowed(key, limit, window, opts))
}

// Sliding is RL.SLIDING key limit window: an exact sliding log (one entry per
// unit; limit at most rl.sliding-max-limit). Options: Cost, Refund.
func (c *Client) Sliding(ctx context.Context, key string, limit int64, window time.Duration, opts ...Option) (Decision, error) {
	return c.decide(ctx, one(cmdSliding).windowed(key, limit, window, opts))
}

// SlidingCounter is RL.SLIDINGCOUNTER key limit window: a sliding window
// estimated from two fixed windows, constant memory. Options: Cost, Refund,
// Debit.
func (c *Client) SlidingCounter(ctx context.Context, key string, limit int64, window time.Duration, opts ...Option) (Decision, error) {
	return c.decide(ctx, one(cmdSlidingCounter).windowed(key, limit, window, opts))
}

// Bucket is RL.BUCKET key capacity tokens period: a token bucket of capacity,
// refilled by tokens every period. Options: Cost, Refund, Debit.
func (c *Client) Bucket(ctx context.Context, key string, capacity, tokens int64, period time.Duration, opts ...Option) (Decision, error) {
	return c.decide(ctx, one(cmdBucket).bucket(key, capacity, tokens, period, opts))
}

// GCRA is RL.GCRA key capacity tokens period: RL.BUCKET's decisions kept in
// one integer. Options: Cost, Refund, Debit, Delay.
func (c *Client) GCRA(ctx context.Context, key string, capacity, tokens int64, period time.Duration, opts ...Option) (Decision, error) {
	return c.decide(ctx, one(cmdGCRA).bucket(key, capacity, tokens, period, opts))
}

// Throttle is CL.THROTTLE key max_burst count period quantity, redis-cell's
// command (module only: ErrModuleOnly on the library). Its reply becomes a
// Decision: Allowed = !limited, Limit = maxBurst+1, RetryAfter and
// ResetAfter in whole seconds (0 retry when allowed, Never when quantity >
// limit).
func (c *Client) Throttle(ctx context.Context, key string, maxBurst, count int64, period time.Duration, quantity int64) (Decision, error) {
	return c.decide(ctx, one(cmdThrottle).throttle(key, maxBurst, count, period, quantity))
}

// All is RL.ALL: every key checked and taken all or nothing, each under its
// policy, in one atomic call. Options: Cost, Refund, Debit (every key but an
// ACQUIRE one, which counts one lease). On a cluster the keys must share a
// hash slot ("{user42}:burst", "{user42}:day").
func (c *Client) All(ctx context.Context, checks []KeyPolicy, opts ...Option) (AllDecision, error) {
	k := one(cmdAll).all(checks, opts)
	r, err := c.send(ctx, k)
	return c.finishAll(k, r, err)
}

// Acquire is RL.ACQUIRE key limit ttl id: take one of limit concurrent leases
// for id, for at most ttl (the same call again renews it). When the lease is
// Allowed, give it back with Release, typically deferred:
//
//	lease, err := limiter.Acquire(ctx, "rl:exports", 10, 5*time.Minute, requestID)
//	if err != nil { ... }
//	if !lease.Allowed { ... 503 ... }
//	defer lease.Release(ctx)
func (c *Client) Acquire(ctx context.Context, key string, limit int64, ttl time.Duration, id string) (*Lease, error) {
	d, err := c.decide(ctx, one(cmdAcquire).acquire(key, limit, ttl, id))
	if err != nil {
		return nil, err
	}
	return &Lease{Decision: d, Key: key, ID: id, c: c, limit: limit, ttl: ttl}, nil
}

// Release is RL.RELEASE key id: true if the lease was held and is now given
// back, false if it was not held (released already, expired, never taken).
func (c *Client) Release(ctx context.Context, key, id string) (bool, error) {
	k := one(cmdRelease).release(key, id)
	r, err := c.send(ctx, k)
	return c.finishReleased(k, r, err)
}

// Penalty is RL.PENALTY key strikes window block max: record a strike (a
// failed login, a bad token); strikes within window block the key for block,
// doubling per repeat up to max. Allowed is false while blocked. Option:
// Cost (Cost(0) asks whether the key is blocked).
func (c *Client) Penalty(ctx context.Context, key string, strikes int64, window, block, max time.Duration, opts ...Option) (Decision, error) {
	return c.decide(ctx, one(cmdPenalty).penalty(key, strikes, window, block, max, opts))
}

// Share is RL.SHARE key tenant weight capacity tokens period: one budget
// (capacity, refilled by tokens per period) shared by tenants in proportion
// to their weights, idle shares lent to the busy. Options: Cost, Refund,
// Debit. On a server whose RL predates RL.SHARE the error matches
// ErrUnsupported.
func (c *Client) Share(ctx context.Context, key, tenant string, weight, capacity, tokens int64, period time.Duration, opts ...Option) (Decision, error) {
	return c.decide(ctx, one(cmdShare).share(key, tenant, weight, capacity, tokens, period, opts))
}
