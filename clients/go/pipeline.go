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

// pendingCall is a queued call and its result, allocated together.
type pendingCall[T any] struct {
	p Pending[T]
	k call
}

type pipeEntry struct {
	k   *call
	dec *Pending[Decision]
	all *Pending[AllDecision]
	rel *Pending[bool]
}

// Pipeline queues calls and sends them in one round trip on Exec (through
// the client's Pipeliner; without one, one at a time). Each call returns a
// Pending whose Result is set by Exec. A Pipeline is not safe for concurrent
// use; after Exec it is empty and can be used again, reusing its buffers.
type Pipeline struct {
	c       *Client
	entries []pipeEntry
	arena   []any // every queued call's arguments, one after the other
	slab    []pendingCall[Decision]
	box     boxer
	cmds    [][]any // Exec's, reused
	sent    []int
}

// Pipeline starts a batch.
func (c *Client) Pipeline() *Pipeline { return &Pipeline{c: c} }

// Len is the number of calls queued.
func (p *Pipeline) Len() int { return len(p.entries) }

// slabSize: a pipeline allocates its decisions this many at a time.
const slabSize = 64

func (p *Pipeline) decision(cmd *command) (*call, *Pending[Decision]) {
	if len(p.slab) == cap(p.slab) {
		p.slab = make([]pendingCall[Decision], 0, slabSize)
	}
	p.slab = p.slab[:len(p.slab)+1]
	e := &p.slab[len(p.slab)-1]
	e.k.init(cmd, &p.arena, &p.box)
	p.entries = append(p.entries, pipeEntry{k: &e.k, dec: &e.p})
	return &e.k, &e.p
}

// Fixed queues RL.FIXED (see Client.Fixed).
func (p *Pipeline) Fixed(key string, limit int64, window time.Duration, opts ...Option) *Pending[Decision] {
	k, r := p.decision(cmdFixed)
	k.windowed(key, limit, window, opts).seal()
	return r
}

// Sliding queues RL.SLIDING (see Client.Sliding).
func (p *Pipeline) Sliding(key string, limit int64, window time.Duration, opts ...Option) *Pending[Decision] {
	k, r := p.decision(cmdSliding)
	k.windowed(key, limit, window, opts).seal()
	return r
}

// SlidingCounter queues RL.SLIDINGCOUNTER (see Client.SlidingCounter).
func (p *Pipeline) SlidingCounter(key string, limit int64, window time.Duration, opts ...Option) *Pending[Decision] {
	k, r := p.decision(cmdSlidingCounter)
	k.windowed(key, limit, window, opts).seal()
	return r
}

// Bucket queues RL.BUCKET (see Client.Bucket).
func (p *Pipeline) Bucket(key string, capacity, tokens int64, period time.Duration, opts ...Option) *Pending[Decision] {
	k, r := p.decision(cmdBucket)
	k.bucket(key, capacity, tokens, period, opts).seal()
	return r
}

// GCRA queues RL.GCRA (see Client.GCRA).
func (p *Pipeline) GCRA(key string, capacity, tokens int64, period time.Duration, opts ...Option) *Pending[Decision] {
	k, r := p.decision(cmdGCRA)
	k.bucket(key, capacity, tokens, period, opts).seal()
	return r
}

// Throttle queues CL.THROTTLE (see Client.Throttle).
func (p *Pipeline) Throttle(key string, maxBurst, count int64, period time.Duration, quantity int64) *Pending[Decision] {
	k, r := p.decision(cmdThrottle)
	k.throttle(key, maxBurst, count, period, quantity).seal()
	return r
}

// All queues RL.ALL (see Client.All).
func (p *Pipeline) All(checks []KeyPolicy, opts ...Option) *Pending[AllDecision] {
	e := &pendingCall[AllDecision]{}
	e.k.init(cmdAll, &p.arena, &p.box)
	e.k.all(checks, opts).seal()
	p.entries = append(p.entries, pipeEntry{k: &e.k, all: &e.p})
	return &e.p
}

// Acquire queues RL.ACQUIRE (see Client.Acquire); release with
// Client.Release or Pipeline.Release.
func (p *Pipeline) Acquire(key string, limit int64, ttl time.Duration, id string) *Pending[Decision] {
	k, r := p.decision(cmdAcquire)
	k.acquire(key, limit, ttl, id).seal()
	return r
}

// Release queues RL.RELEASE (see Client.Release).
func (p *Pipeline) Release(key, id string) *Pending[bool] {
	e := &pendingCall[bool]{}
	e.k.init(cmdRelease, &p.arena, &p.box)
	e.k.release(key, id).seal()
	p.entries = append(p.entries, pipeEntry{k: &e.k, rel: &e.p})
	return &e.p
}

// Penalty queues RL.PENALTY (see Client.Penalty).
func (p *Pipeline) Penalty(key string, strikes int64, window, block, max time.Duration, opts ...Option) *Pending[Decision] {
	k, r := p.decision(cmdPenalty)
	k.penalty(key, strikes, window, block, max, opts).seal()
	return r
}

// Share queues RL.SHARE (see Client.Share).
func (p *Pipeline) Share(key, tenant string, weight, capacity, tokens int64, period time.Duration, opts ...Option) *Pending[Decision] {
	k, r := p.decision(cmdShare)
	k.share(key, tenant, weight, capacity, tokens, period, opts).seal()
	return r
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
	defer p.reset()
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
	cmds, sent := p.cmds[:0], p.sent[:0]
	for i, e := range entries {
		args, err := e.k.render(b)
		if err != nil {
			note(p.settle(e, nil, err))
			continue
		}
		cmds = append(cmds, args)
		sent = append(sent, i)
	}
	p.cmds, p.sent = cmds, sent
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

// reset empties the pipeline for the next batch, keeping its buffers but
// nothing they pointed to.
func (p *Pipeline) reset() {
	for i := range p.entries {
		p.entries[i] = pipeEntry{}
	}
	p.entries = p.entries[:0]
	for i := range p.arena {
		p.arena[i] = nil
	}
	p.arena = p.arena[:0]
	for i := range p.cmds {
		p.cmds[i] = nil
	}
}
