package rl

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Version is this client's version, the RL module's it was made for.
const Version = "0.2.0"

// Doer sends one command and returns its reply: integers as int64, arrays as
// []any, nil for a null; a server error reply as an error whose text is the
// reply's ("ERR ...", "WRONGTYPE ..."). Every Redis client for Go can be
// made one in a line; see DoFunc.
type Doer interface {
	Do(ctx context.Context, args ...any) (any, error)
}

// DoFunc makes a function a Doer. With go-redis v9:
//
//	rl.DoFunc(func(ctx context.Context, args ...any) (any, error) { return rdb.Do(ctx, args...).Result() })
type DoFunc func(ctx context.Context, args ...any) (any, error)

// Do calls f.
func (f DoFunc) Do(ctx context.Context, args ...any) (any, error) { return f(ctx, args...) }

// Pipeliner sends a batch of commands in one round trip. It returns one
// reply per command, in order; a command's own error reply is an error value
// in its slot. The returned error is for a failure of the whole batch.
type Pipeliner interface {
	DoPipeline(ctx context.Context, cmds [][]any) ([]any, error)
}

// PipelineFunc makes a function a Pipeliner.
type PipelineFunc func(ctx context.Context, cmds [][]any) ([]any, error)

// DoPipeline calls f.
func (f PipelineFunc) DoPipeline(ctx context.Context, cmds [][]any) ([]any, error) {
	return f(ctx, cmds)
}

// Backend is how the server runs RL.
type Backend int32

const (
	// BackendAuto: learn it from the server on the first call (the default).
	BackendAuto Backend = iota
	// BackendModule: the RL module (RL.GCRA key ...).
	BackendModule
	// BackendLibrary: the rl Functions library (FCALL rl_gcra 1 key ...).
	BackendLibrary
)

func (b Backend) String() string {
	switch b {
	case BackendModule:
		return "module"
	case BackendLibrary:
		return "library"
	}
	return "auto"
}

type failMode int

const (
	failError failMode = iota
	failOpen
	failClosed
)

// FailClosedRetryAfter is the RetryAfter of a decision made WithFailClosed
// while Redis is unreachable.
const FailClosedRetryAfter = time.Second

// ClientOption configures New.
type ClientOption func(*Client)

// WithBackend skips the probe: every call is sent to b (BackendModule or
// BackendLibrary).
func WithBackend(b Backend) ClientOption { return func(c *Client) { c.forced = b } }

// WithPipeliner gives Pipeline.Exec your client's own pipelining. Without
// it (and without a Doer that is also a Pipeliner) a batch is sent one
// command at a time.
func WithPipeliner(p Pipeliner) ClientOption { return func(c *Client) { c.pipe = p } }

// WithFailOpen: when Redis cannot be reached (a connection error, a timeout,
// LOADING, MASTERDOWN...), calls answer an allowed Decision (Remaining = Limit)
// with Unavailable set to the error, and a nil error. RL's own errors (bad
// arguments, WRONGTYPE, OOM, not loaded) are still returned.
func WithFailOpen() ClientOption { return func(c *Client) { c.fail = failOpen } }

// WithFailClosed: when Redis cannot be reached, calls answer a rejected
// Decision (Remaining 0, RetryAfter FailClosedRetryAfter) with Unavailable
// set, and a nil error. The default, without either option, is to return the
// error.
func WithFailClosed() ClientOption { return func(c *Client) { c.fail = failClosed } }

// Client sends RL's commands through a Doer. It is safe for concurrent use;
// make one per Redis server (or cluster) and keep it: the backend is learnt
// once.
type Client struct {
	do     Doer
	pipe   Pipeliner
	forced Backend
	fail   failMode

	mu       sync.Mutex
	detected int32 // a Backend, 0 until learnt
}

// New makes a Client over d. If d also implements Pipeliner, batches use it.
func New(d Doer, opts ...ClientOption) *Client {
	c := &Client{do: d}
	if p, ok := d.(Pipeliner); ok {
		c.pipe = p
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Backend gives the backend calls are sent to, learning it from the server
// on the first call (COMMAND INFO rl.gcra, else FUNCTION LIST LIBRARYNAME rl)
// and keeping it. A server with neither is an error matching ErrNotLoaded,
// not kept: the next call probes again.
func (c *Client) Backend(ctx context.Context) (Backend, error) {
	if c.forced != BackendAuto {
		return c.forced, nil
	}
	if b := Backend(atomic.LoadInt32(&c.detected)); b != BackendAuto {
		return b, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if b := Backend(atomic.LoadInt32(&c.detected)); b != BackendAuto {
		return b, nil
	}
	b, err := c.detect(ctx)
	if err != nil {
		return BackendAuto, err
	}
	atomic.StoreInt32(&c.detected, int32(b))
	return b, nil
}

func (c *Client) forget() { atomic.StoreInt32(&c.detected, int32(BackendAuto)) }

func (c *Client) detect(ctx context.Context) (Backend, error) {
	var refused []string
	r, err := c.do.Do(ctx, "COMMAND", "INFO", "rl.gcra")
	if err != nil {
		if _, _, ok := splitServerError(err); !ok {
			return BackendAuto, err
		}
		refused = append(refused, "COMMAND INFO: "+err.Error())
	} else if a, ok := r.([]any); ok && len(a) > 0 && a[0] != nil {
		return BackendModule, nil
	}
	r, err = c.do.Do(ctx, "FUNCTION", "LIST", "LIBRARYNAME", "rl")
	if err != nil {
		if _, _, ok := splitServerError(err); !ok {
			return BackendAuto, err
		}
		refused = append(refused, "FUNCTION LIST: "+err.Error())
	} else if nonEmpty(r) {
		return BackendLibrary, nil
	}
	if len(refused) > 0 {
		return BackendAuto, &NotLoadedError{Detail: strings.Join(refused, "; ") +
			"; if RL is loaded but these are not allowed, make the client WithBackend"}
	}
	return BackendAuto, &NotLoadedError{}
}

func nonEmpty(r any) bool {
	switch x := r.(type) {
	case []any:
		return len(x) > 0
	case map[any]any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return false
}

// Option is an option of a call: Cost, Refund, Debit, Delay.
type Option struct {
	name string
	word any // name, boxed once
	n    int64
	d    time.Duration
	dur  bool
}

// Cost n: how many units the call takes, all or nothing (default 1). Cost(0)
// inspects: the current state, nothing written.
func Cost(n int64) Option { return Option{name: "COST", word: "COST", n: n} }

// Refund n: give back up to n units taken earlier (the upstream call failed).
func Refund(n int64) Option { return Option{name: "REFUND", word: "REFUND", n: n} }

// Debit n: charge n units after the fact, whatever is left, into debt if need
// be (the real cost of work known only once it is done).
func Debit(n int64) Option { return Option{name: "DEBIT", word: "DEBIT", n: n} }

// Delay max (GCRA only, as a call option or inside the GCRA policy of All):
// schedule instead of reject. An allowed call's RetryAfter is then how long
// to wait before acting.
func Delay(max time.Duration) Option { return Option{name: "DELAY", word: "DELAY", d: max, dur: true} }

// Name is the option's word as RL reads it: "COST", "REFUND", "DEBIT", "DELAY".
func (o Option) Name() string { return o.name }

type replyKind int

const (
	replyDecision replyKind = iota
	replyThrottle
	replyAll
	replyReleased
)

// command is what a call needs to know about its command; the words are
// boxed once here, not on every call.
type command struct {
	name   string // "RL.GCRA"
	fn     string // "rl_gcra"; "" when the library has none
	reply  replyKind
	nameV  any
	fnV    any
	policy bool // RL.ALL: numkeys after the name
}

func newCommand(name, fn string, reply replyKind) *command {
	return &command{name: name, fn: fn, reply: reply, nameV: name, fnV: fn, policy: reply == replyAll}
}

var (
	cmdFixed          = newCommand("RL.FIXED", "rl_fixed", replyDecision)
	cmdSliding        = newCommand("RL.SLIDING", "rl_sliding", replyDecision)
	cmdSlidingCounter = newCommand("RL.SLIDINGCOUNTER", "rl_slidingcounter", replyDecision)
	cmdBucket         = newCommand("RL.BUCKET", "rl_bucket", replyDecision)
	cmdGCRA           = newCommand("RL.GCRA", "rl_gcra", replyDecision)
	cmdThrottle       = newCommand("CL.THROTTLE", "", replyThrottle)
	cmdAll            = newCommand("RL.ALL", "rl_all", replyAll)
	cmdAcquire        = newCommand("RL.ACQUIRE", "rl_acquire", replyDecision)
	cmdRelease        = newCommand("RL.RELEASE", "rl_release", replyReleased)
	cmdPenalty        = newCommand("RL.PENALTY", "rl_penalty", replyDecision)
	cmdShare          = newCommand("RL.SHARE", "rl_share", replyDecision)

	fcallV any = "FCALL"
)

// call is one command, built once and rendered for a backend. Its
// arguments are appended to *dst (the call's own buffer, or a pipeline's
// arena shared by all its calls) from start, after three free slots: the
// module form uses the last one or two for the command's name (and RL.ALL's
// numkeys), the library form all three for FCALL, the function and numkeys.
type call struct {
	cmd     *command
	numkeys int
	dst     *[]any
	start   int
	end     int // set by seal
	window  time.Duration
	limit   int64           // for a fail-open or fail-closed decision
	windows []time.Duration // RL.ALL's keys'
	err     error           // an argument refused here
	box     *boxer          // a pipeline's, to box repeated values once
}

// oneCall is a call outside a pipeline, with room for its arguments: one
// allocation.
type oneCall struct {
	call
	own []any
	buf [12]any
}

// one is a call of cmd outside a pipeline.
func one(cmd *command) *call {
	o := &oneCall{}
	o.own = o.buf[:0]
	o.init(cmd, &o.own, nil)
	return &o.call
}

func (k *call) init(cmd *command, dst *[]any, box *boxer) {
	k.cmd, k.dst, k.box, k.numkeys = cmd, dst, box, 1
	k.start = len(*dst)
	*dst = append(*dst, nil, nil, nil)
}

func (k *call) add(v ...any) { *k.dst = append(*k.dst, v...) }

func (k *call) int(n int64) { *k.dst = append(*k.dst, k.box.int(n)) }

func (k *call) dur(name string, d time.Duration) {
	v, err := k.box.dur(k.cmd.name, name, d)
	if err != nil && k.err == nil {
		k.err = err
	}
	*k.dst = append(*k.dst, v)
}

func (k *call) options(opts []Option) {
	for _, o := range opts {
		*k.dst = append(*k.dst, o.word)
		if o.dur {
			k.dur(o.name, o.d)
		} else {
			k.int(o.n)
		}
	}
}

// seal ends the call's arguments.
func (k *call) seal() *call {
	k.end = len(*k.dst)
	return k
}

func (k *call) render(b Backend) ([]any, error) {
	if k.err != nil {
		return nil, k.err
	}
	args := (*k.dst)[k.start:k.end:k.end]
	if b == BackendLibrary {
		if k.cmd.fn == "" {
			return nil, ErrModuleOnly
		}
		args[0], args[1], args[2] = fcallV, k.cmd.fnV, k.box.int(int64(k.numkeys))
		return args, nil
	}
	if k.cmd.policy {
		args[1], args[2] = k.cmd.nameV, k.box.int(int64(k.numkeys))
		return args[1:], nil
	}
	args[2] = k.cmd.nameV
	return args[2:], nil
}

// boxer boxes the integers and durations a pipeline repeats (the same limit
// and period on every call) once. A nil boxer boxes every time.
type boxer struct {
	ints [4]struct {
		n int64
		v any
	}
	durs [2]struct {
		d time.Duration
		v any
	}
	ni, nd int
}

func (b *boxer) int(n int64) any {
	if b == nil || (n >= 0 && n < 256) { // small ones are never allocated
		return n
	}
	for i := range b.ints {
		if b.ints[i].v != nil && b.ints[i].n == n {
			return b.ints[i].v
		}
	}
	v := any(n)
	b.ints[b.ni].n, b.ints[b.ni].v = n, v
	b.ni = (b.ni + 1) % len(b.ints)
	return v
}

func (b *boxer) dur(cmd, name string, d time.Duration) (any, error) {
	if b != nil {
		for i := range b.durs {
			if b.durs[i].v != nil && b.durs[i].d == d {
				return b.durs[i].v, nil
			}
		}
	}
	s, err := msArg(cmd, name, d)
	if err != nil {
		return s, err
	}
	v := any(s)
	if b != nil {
		b.durs[b.nd].d, b.durs[b.nd].v = d, v
		b.nd = (b.nd + 1) % len(b.durs)
	}
	return v, nil
}

// send runs one call: the backend, then the command.
func (c *Client) send(ctx context.Context, k *call) (any, error) {
	b, err := c.Backend(ctx)
	if err != nil {
		return nil, err
	}
	args, err := k.seal().render(b)
	if err != nil {
		return nil, err
	}
	return c.do.Do(ctx, args...)
}

// failure types err for k; a connection error under a fail mode becomes a
// decision (ok true).
func (c *Client) failure(k *call, err error) (d Decision, ok bool, out error) {
	err, transport := classify(k.cmd.name, err)
	var nl *NotLoadedError
	if errors.As(err, &nl) && nl.Detail != "" {
		c.forget() // the server lost RL (or another took its place): probe again
	}
	if !transport || c.fail == failError {
		return Decision{}, false, err
	}
	d = Decision{Limit: k.limit, Window: k.window, Unavailable: err}
	if c.fail == failOpen {
		d.Allowed, d.Remaining = true, k.limit
	} else {
		d.RetryAfter, d.ResetAfter = FailClosedRetryAfter, FailClosedRetryAfter
	}
	return d, true, nil
}

// finish turns a reply (or an error) into k's typed result.
func (c *Client) finishDecision(k *call, r any, err error) (Decision, error) {
	if err != nil {
		d, _, err := c.failure(k, err)
		return d, err
	}
	if k.cmd.reply == replyThrottle {
		return parseThrottle(k.cmd.name, r, k.window)
	}
	return parseDecision(k.cmd.name, r, k.window)
}

func (c *Client) finishAll(k *call, r any, err error) (AllDecision, error) {
	if err != nil {
		d, ok, err := c.failure(k, err)
		if !ok {
			return AllDecision{}, err
		}
		out := AllDecision{Decision: d, Keys: make([]Decision, len(k.windows))}
		for i, w := range k.windows {
			out.Keys[i] = d
			out.Keys[i].Window = w
		}
		return out, nil
	}
	return parseAll(r, k.windows)
}

func (c *Client) finishReleased(k *call, r any, err error) (bool, error) {
	if err != nil {
		err, _ = classify(k.cmd.name, err)
		return false, err
	}
	return parseReleased(r)
}

func (c *Client) decide(ctx context.Context, k *call) (Decision, error) {
	r, err := c.send(ctx, k)
	return c.finishDecision(k, r, err)
}
