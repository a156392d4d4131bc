package rl

import (
	"context"
	"fmt"
	"time"
)

// Pending is the result of a call queued on a Pipeline, set by Exec.
type Pending[T any] struct {
	v    T
	err  error
	done bool
}

// Result gives the call's result once Exec has run, else an error.
func (p *Pending[T]) Result() (T, error) {
	if !p.done {
		var zero T
		return zero, errNotExecuted
	}
	return p.v, p.err
}

func (p *Pending[T]) set(v T, err error) { p.v, p.err, p.done = v, err, true }

var errNotExecuted = fmt.Errorf("rl: the pipeline has not been executed: call Exec first")

type pipeEntry struct {
	k   *call
	dec *Pending[Decision]
	all *Pending[AllDecision]
	rel *Pending[bool]
}

// Pipeline queues calls and sends them in one round trip on Exec (through
// the client's Pipeliner; without one, one at a time). Each call returns a
// Pending whose Result is set by Exec. A Pipeline is not safe for concurrent
// use; after Exec it is empty and can be used again.
type Pipeline struct {
	c       *Client
	entries []pipeEntry
}

// Pipeline starts a batch.
func (c *Client) Pipeline() *Pipeline { return &Pipeline{c: c} }

// Len is the number of calls queued.
func (p *Pipeline) Len() int { return len(p.entries) }

func (p *Pipeline) decision(k *call) *Pending[Decision] {
	r := &Pending[Decision]{}
	p.entries = append(p.entries, pipeEntry{k: k, dec: r})
	return r
}

// Fixed queues RL.FIXED (see Client.Fixed).
func (p *Pipeline) Fixed(key string, limit int64, window time.Duration, opts ...Option) *Pending[Decision] {
	return p.decision(fixedCall("RL.FIXED", "rl_fixed", key, limit, window, opts))
}

// Sliding queues RL.SLIDING (see Client.Sliding).
func (p *Pipeline) Sliding(key string, limit int64, window time.Duration, opts ...Option) *Pending[Decision] {
	return p.decision(fixedCall("RL.SLIDING", "rl_sliding", key, limit, window, opts))
}

// SlidingCounter queues RL.SLIDINGCOUNTER (see Client.SlidingCounter).
func (p *Pipeline) SlidingCounter(key string, limit int64, window time.Duration, opts ...Option) *Pending[Decision] {
	return p.decision(fixedCall("RL.SLIDINGCOUNTER", "rl_slidingcounter", key, limit, window, opts))
}

// Bucket queues RL.BUCKET (see Client.Bucket).
func (p *Pipeline) Bucket(key string, capacity, tokens int64, period time.Duration, opts ...Option) *Pending[Decision] {
	return p.decision(bucketCall("RL.BUCKET", "rl_bucket", key, capacity, tokens, period, opts))
}

// GCRA queues RL.GCRA (see Client.GCRA).
func (p *Pipeline) GCRA(key string, capacity, tokens int64, period time.Duration, opts ...Option) *Pending[Decision] {
	return p.decision(bucketCall("RL.GCRA", "rl_gcra", key, capacity, tokens, period, opts))
}

// Throttle queues CL.THROTTLE (see Client.Throttle).
func (p *Pipeline) Throttle(key string, maxBurst, count int64, period time.Duration, quantity int64) *Pending[Decision] {
	return p.decision(throttleCall(key, maxBurst, count, period, quantity))
}

// All queues RL.ALL (see Client.All).
func (p *Pipeline) All(checks []KeyPolicy, opts ...Option) *Pending[AllDecision] {
	r := &Pending[AllDecision]{}
	p.entries = append(p.entries, pipeEntry{k: allCall(checks, opts), all: r})
	return r
}

// Acquire queues RL.ACQUIRE (see Client.Acquire); release with
// Client.Release or Pipeline.Release.
func (p *Pipeline) Acquire(key string, limit int64, ttl time.Duration, id string) *Pending[Decision] {
	return p.decision(acquireCall(key, limit, ttl, id))
}

// Release queues RL.RELEASE (see Client.Release).
func (p *Pipeline) Release(key, id string) *Pending[bool] {
	r := &Pending[bool]{}
	p.entries = append(p.entries, pipeEntry{k: releaseCall(key, id), rel: r})
	return r
}

// Penalty queues RL.PENALTY (see Client.Penalty).
func (p *Pipeline) Penalty(key string, strikes int64, window, block, max time.Duration, opts ...Option) *Pending[Decision] {
	return p.decision(penaltyCall(key, strikes, window, block, max, opts))
}

// Share queues RL.SHARE (see Client.Share).
func (p *Pipeline) Share(key, tenant string, weight, capacity, tokens int64, period time.Duration, opts ...Option) *Pending[Decision] {
	return p.decision(shareCall(key, tenant, weight, capacity, tokens, period, opts))
}

func (p *Pipeline) settle(e pipeEntry, r any, err error) error {
	switch {
	case e.dec != nil:
		d, err := p.c.finishDecision(e.k, r, err)
		e.dec.set(d, err)
		return err
	case e.all != nil:
		d, err := p.c.finishAll(e.k, r, err)
		e.all.set(d, err)
		return err
	default:
		ok, err := p.c.finishReleased(e.k, r, err)
		e.rel.set(ok, err)
		return err
	}
}

// Exec sends the queued calls and sets their results. It returns the first
// call's error, if any (each Pending has its own); under WithFailOpen or
// WithFailClosed, calls that could not reach Redis get that decision and no
// error.
func (p *Pipeline) Exec(ctx context.Context) error {
	entries := p.entries
	p.entries = nil
	if len(entries) == 0 {
		return nil
	}
	var first error
	note := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	b, err := p.c.Backend(ctx)
	if err != nil {
		for _, e := range entries {
			note(p.settle(e, nil, err))
		}
		return first
	}
	cmds := make([][]any, 0, len(entries))
	sent := make([]int, 0, len(entries))
	for i, e := range entries {
		args, err := e.k.render(b)
		if err != nil {
			note(p.settle(e, nil, err))
			continue
		}
		cmds = append(cmds, args)
		sent = append(sent, i)
	}
	if len(cmds) == 0 {
		return first
	}
	replies, err := p.c.batch(ctx, cmds)
	if err == nil && len(replies) != len(cmds) {
		err = fmt.Errorf("rl: the pipeliner answered %d replies to %d commands", len(replies), len(cmds))
	}
	for j, i := range sent {
		if err != nil {
			note(p.settle(entries[i], nil, err))
			continue
		}
		if e, ok := replies[j].(error); ok {
			note(p.settle(entries[i], nil, e))
		} else {
			note(p.settle(entries[i], replies[j], nil))
		}
	}
	return first
}

// batch sends cmds through the Pipeliner, or one by one through the Doer.
func (c *Client) batch(ctx context.Context, cmds [][]any) ([]any, error) {
	if c.pipe != nil {
		return c.pipe.DoPipeline(ctx, cmds)
	}
	out := make([]any, len(cmds))
	for i, args := range cmds {
		r, err := c.do.Do(ctx, args...)
		if err != nil {
			if _, _, ok := splitServerError(err); !ok {
				return nil, err
			}
			out[i] = err
			continue
		}
		out[i] = r
	}
	return out, nil
}
