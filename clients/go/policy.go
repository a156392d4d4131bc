package rl

import (
	"context"
	"sync/atomic"
	"time"
)

// Policy is one key's limiter in All (RL.ALL), made by the constructors of
// policies_gen.go (Fixed, GCRA, Share, ...). A refused argument is kept and
// returned by the call, before anything is sent.
type Policy struct {
	word   string
	wordV  any   // word, boxed once
	before []any // its flags written before the word (SHADOW)
	args   []any
	window time.Duration
	limit  int64
	name   string // the RateLimit fields' name, "" for the default
	shadow bool   // advisory: it never vetoes the call (Shadow)
	err    error
}

// Word is the policy's word in RL.ALL: "FIXED", "GCRA", ...
func (p Policy) Word() string { return p.word }

// Named gives the policy its name in the RateLimit fields of the call's
// AllDecision (by default its word in lower case, "gcra", with -N, its
// position from 1, when the call has that word more than once). A name with
// a byte outside printable ASCII is refused (an *ArgumentError from the call).
func (p Policy) Named(name string) Policy {
	if err := checkName(name); err != nil && p.err == nil {
		p.err = &ArgumentError{Command: "RL.ALL", Message: p.word + " " + err.Error()}
	}
	p.name = name
	return p
}

// policyBuilder builds a Policy's arguments with the command's rules.
type policyBuilder struct {
	b      builder
	p      Policy
	args   []any
	before []any
}

func newPolicy(cmd *command, n int) *policyBuilder {
	pb := &policyBuilder{p: Policy{word: cmd.word, wordV: cmd.wordV}, args: make([]any, 0, n)}
	pb.b = builder{cmd: cmd, policy: true, dst: &pb.args, pre: &pb.before}
	return pb
}

// policyOf is the RL.ALL policy of cmd (each generated policy function): its
// arguments vs, checked against cmd's row, then the options it takes there.
func policyOf(cmd *command, room int, opts []Option, vs ...value) Policy {
	p := newPolicy(cmd, room)
	p.b.args(vs...)
	p.b.options(cmd.policyOptions, opts)
	return p.done()
}

func (pb *policyBuilder) done() Policy {
	pb.p.args, pb.p.err, pb.p.limit, pb.p.window = pb.args, pb.b.err, pb.b.limit, pb.b.window
	pb.p.before, pb.p.shadow = pb.before, pb.b.shadow
	return pb.p
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
	build    func() *call // the call again, for Renew
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

// Renew takes the lease again for its ttl (the same call, same id), for a
// job that runs longer than the ttl; the Lease is updated.
func (l *Lease) Renew(ctx context.Context) (Decision, error) {
	d, err := l.c.decide(ctx, l.build())
	if err == nil {
		l.Decision = d
		if d.Allowed {
			atomic.StoreInt32(&l.released, 0)
		}
	}
	return d, err
}

// lease makes a Lease of the call build gives, for key and id.
func (c *Client) lease(ctx context.Context, build func() *call, key, id string) (*Lease, error) {
	d, err := c.decide(ctx, build())
	if err != nil {
		return nil, err
	}
	return &Lease{Decision: d, Key: key, ID: id, c: c, build: build}, nil
}

// detached is ctx without its deadline and cancellation.
type detached struct{ parent context.Context }

func (detached) Deadline() (time.Time, bool) { return time.Time{}, false }
func (detached) Done() <-chan struct{}       { return nil }
func (detached) Err() error                  { return nil }
func (d detached) Value(key any) any         { return d.parent.Value(key) }
