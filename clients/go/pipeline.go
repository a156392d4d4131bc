package rl

import (
	"context"
	"fmt"
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

// pipeEntry is a queued call, kept in the pipeline's reused entries, and
// where its result goes: the only part allocated per call.
type pipeEntry struct {
	k   call
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
	slab    []Pending[Decision]
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

// queue adds an entry for cmd; its call is built at once, before the next
// append can move it.
func (p *Pipeline) queue(cmd *command, e pipeEntry) *call {
	p.entries = append(p.entries, e)
	k := &p.entries[len(p.entries)-1].k
	k.init(cmd, &p.arena, &p.box)
	return k
}

func (p *Pipeline) decision(cmd *command) (*call, *Pending[Decision]) {
	if len(p.slab) == cap(p.slab) {
		p.slab = make([]Pending[Decision], 0, slabSize)
	}
	p.slab = p.slab[:len(p.slab)+1]
	r := &p.slab[len(p.slab)-1]
	return p.queue(cmd, pipeEntry{dec: r}), r
}

func (p *Pipeline) allDecision(cmd *command) (*call, *Pending[AllDecision]) {
	r := &Pending[AllDecision]{}
	return p.queue(cmd, pipeEntry{all: r}), r
}

func (p *Pipeline) released(cmd *command) (*call, *Pending[bool]) {
	r := &Pending[bool]{}
	return p.queue(cmd, pipeEntry{rel: r}), r
}

func (p *Pipeline) settle(e *pipeEntry, r any, err error) error {
	switch {
	case e.dec != nil:
		d, err := p.c.finishDecision(&e.k, r, err)
		e.dec.set(d, err)
		return err
	case e.all != nil:
		d, err := p.c.finishAll(&e.k, r, err)
		e.all.set(d, err)
		return err
	default:
		ok, err := p.c.finishReleased(&e.k, r, err)
		e.rel.set(ok, err)
		return err
	}
}

// Exec sends the queued calls within the client's deadline and sets their
// results. It returns the first call's error, if any (each Pending has its
// own); under WithFailOpen or WithFailClosed, calls that could not reach
// Redis get that decision and no error. Calls the server answered it has no
// such command or function are sent once more after a new detection.
func (p *Pipeline) Exec(ctx context.Context) error {
	entries := p.entries
	if len(entries) == 0 {
		return nil
	}
	ctx, cancel := p.c.deadline(ctx)
	defer cancel()
	defer p.reset(ctx)
	var first error
	note := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	b, err := p.c.Backend(ctx)
	if err != nil {
		for i := range entries {
			note(p.settle(&entries[i], nil, err))
		}
		return first
	}
	lost := p.send(ctx, entries, b, note, p.c.forced == BackendAuto)
	if len(lost) == 0 {
		return first
	}
	if b, err = p.c.Detect(ctx); err != nil {
		for i := range lost {
			note(p.settle(&lost[i], nil, err))
		}
		return first
	}
	p.send(ctx, lost, b, note, false)
	return first
}

// send renders entries for b, sends them in one batch and settles each,
// except (when keep) those whose command the server does not have: those are
// returned, to be sent again.
func (p *Pipeline) send(ctx context.Context, entries []pipeEntry, b Backend, note func(error), keep bool) []pipeEntry {
	cmds, sent := p.cmds[:0], p.sent[:0]
	for i := range entries {
		e := &entries[i]
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
		return nil
	}
	replies, err := p.c.within(ctx, func(ctx context.Context) (any, error) { return p.c.batch(ctx, cmds) })
	out, _ := replies.([]any)
	if err == nil && len(out) != len(cmds) {
		err = fmt.Errorf("rl: the pipeliner answered %d replies to %d commands", len(out), len(cmds))
	}
	var lost []pipeEntry
	for j, i := range sent {
		e := &entries[i]
		if err != nil {
			note(p.settle(e, nil, err))
			continue
		}
		rerr, failed := out[j].(error)
		if !failed {
			note(p.settle(e, out[j], nil))
			continue
		}
		if missing(e.k.cmd, rerr) {
			if keep {
				lost = append(lost, *e)
				continue
			}
			if p.c.forced == BackendAuto {
				rerr = unsupported(e.k.cmd, rerr)
			}
		}
		note(p.settle(e, nil, rerr))
	}
	return lost
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
// nothing they pointed to. After a deadline the batch may still be on its way
// in the background: its buffers are then left to it.
func (p *Pipeline) reset(ctx context.Context) {
	for i := range p.entries {
		p.entries[i] = pipeEntry{}
	}
	p.entries = p.entries[:0]
	if ctx.Err() != nil {
		p.arena, p.cmds = nil, nil
		return
	}
	for i := range p.arena {
		p.arena[i] = nil
	}
	p.arena = p.arena[:0]
	for i := range p.cmds {
		p.cmds[i] = nil
	}
}
