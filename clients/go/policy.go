package rl

import (
	"context"
	"sync/atomic"
	"time"
)

// Policy is one key's limiter in All (RL.ALL): Fixed, Sliding,
// SlidingCounter, Bucket, GCRA, Acquire, Penalty, Share.
type Policy struct {
	word   string
	wordV  any // word, boxed once
	args   []any
	window time.Duration
	limit  int64
	err    error
}

// Word is the policy's word in RL.ALL: "FIXED", "GCRA", ...
func (p Policy) Word() string { return p.word }

func (p *Policy) dur(name string, d time.Duration) {
	s, err := msArg("RL.ALL", name, d)
	if err != nil && p.err == nil {
		p.err = err
	}
	p.args = append(p.args, s)
}

func windowPolicy(word string, limit int64, window time.Duration) Policy {
	p := Policy{word: word, wordV: word, window: window, limit: limit, args: make([]any, 0, 2)}
	p.args = append(p.args, limit)
	p.dur("window", window)
	return p
}

// Fixed is the policy FIXED limit window (as Client.Fixed).
func Fixed(limit int64, window time.Duration) Policy { return windowPolicy("FIXED", limit, window) }

// Sliding is the policy SLIDING limit window (as Client.Sliding).
func Sliding(limit int64, window time.Duration) Policy {
	return windowPolicy("SLIDING", limit, window)
}

// SlidingCounter is the policy SLIDINGCOUNTER limit window (as
// Client.SlidingCounter).
func SlidingCounter(limit int64, window time.Duration) Policy {
	return windowPolicy("SLIDINGCOUNTER", limit, window)
}

// Bucket is the policy BUCKET capacity tokens period (as Client.Bucket).
func Bucket(capacity, tokens int64, period time.Duration) Policy {
	p := Policy{word: "BUCKET", wordV: "BUCKET", window: refillWindow(capacity, tokens, period), limit: capacity, args: make([]any, 0, 3)}
	p.args = append(p.args, capacity, tokens)
	p.dur("period", period)
	return p
}

// GCRA is the policy GCRA capacity tokens period [DELAY max] (as
// Client.GCRA); the only option it takes is Delay.
func GCRA(capacity, tokens int64, period time.Duration, opts ...Option) Policy {
	p := Policy{word: "GCRA", wordV: "GCRA", window: refillWindow(capacity, tokens, period), limit: capacity, args: make([]any, 0, 3+2*len(opts))}
	p.args = append(p.args, capacity, tokens)
	p.dur("period", period)
	for _, o := range opts {
		p.args = append(p.args, o.word)
		if o.dur {
			p.dur(o.name, o.d)
		} else {
			p.args = append(p.args, o.n)
		}
	}
	return p
}

// Acquire is the policy ACQUIRE limit ttl id (as Client.Acquire): the call
// also takes one lease for id, released with Client.Release.
func Acquire(limit int64, ttl time.Duration, id string) Policy {
	p := Policy{word: "ACQUIRE", wordV: "ACQUIRE", window: ttl, limit: limit, args: make([]any, 0, 3)}
	p.args = append(p.args, limit)
	p.dur("ttl", ttl)
	p.args = append(p.args, id)
	return p
}

// Penalty is the policy PENALTY strikes window block max (as Client.Penalty).
// In RL.ALL it is only looked at, never struck, and the call needs Cost(0):
// "is this offender blocked, and do the limits have room".
func Penalty(strikes int64, window, block, max time.Duration) Policy {
	p := Policy{word: "PENALTY", wordV: "PENALTY", window: window, limit: strikes, args: make([]any, 0, 4)}
	p.args = append(p.args, strikes)
	p.dur("window", window)
	p.dur("block", block)
	p.dur("max", max)
	return p
}

// Share is the policy SHARE tenant weight capacity tokens period (as
// Client.Share).
func Share(tenant string, weight, capacity, tokens int64, period time.Duration) Policy {
	p := Policy{word: "SHARE", wordV: "SHARE", window: refillWindow(capacity, tokens, period), limit: capacity, args: make([]any, 0, 5)}
	p.args = append(p.args, tenant, weight, capacity, tokens)
	p.dur("period", period)
	return p
}

// KeyPolicy is one key of All and its policy.
type KeyPolicy struct {
	Key    string
	Policy Policy
}

// Key pairs a key with its policy for All:
//
//	limiter.All(ctx, []rl.KeyPolicy{
//		rl.Key("{u42}:second", rl.GCRA(10, 10, time.Second)),
//		rl.Key("{u42}:day", rl.Fixed(1000, 24*time.Hour)),
//	})
func Key(key string, p Policy) KeyPolicy { return KeyPolicy{Key: key, Policy: p} }

// Lease is Acquire's result: the Decision and what Release needs.
type Lease struct {
	Decision
	Key string
	ID  string

	c        *Client
	limit    int64
	ttl      time.Duration
	released int32
}

// Release gives the lease back (RL.RELEASE key id) when it was acquired and
// not yet released; true if the server still held it. It is meant to be
// deferred: it ignores ctx's cancellation (keeping its values), so a request
// whose context has ended still frees its slot. A lease that was not Allowed
// releases nothing (false, nil).
func (l *Lease) Release(ctx context.Context) (bool, error) {
	if l == nil || !l.Allowed || !atomic.CompareAndSwapInt32(&l.released, 0, 1) {
		return false, nil
	}
	ok, err := l.c.Release(detached{ctx}, l.Key, l.ID)
	if err != nil {
		atomic.StoreInt32(&l.released, 0) // a failed release can be tried again
	}
	return ok, err
}

// Renew takes the lease again for its ttl (the same RL.ACQUIRE call, same
// id), for a job that runs longer than the ttl; the Lease is updated.
func (l *Lease) Renew(ctx context.Context) (Decision, error) {
	d, err := l.c.decide(ctx, one(cmdAcquire).acquire(l.Key, l.limit, l.ttl, l.ID))
	if err == nil {
		l.Decision = d
		if d.Allowed {
			atomic.StoreInt32(&l.released, 0)
		}
	}
	return d, err
}

// detached is ctx without its deadline and cancellation.
type detached struct{ parent context.Context }

func (detached) Deadline() (time.Time, bool) { return time.Time{}, false }
func (detached) Done() <-chan struct{}       { return nil }
func (detached) Err() error                  { return nil }
func (d detached) Value(key any) any         { return d.parent.Value(key) }
