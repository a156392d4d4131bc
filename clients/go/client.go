package rl

import (
	"context"
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

// FailClosedRetryAfter is the RetryAfter and ResetAfter of a decision made
// WithFailClosed while Redis is unreachable (so Retry-After: 1).
const FailClosedRetryAfter = time.Second

// DefaultTimeout is a call's deadline unless WithTimeout sets another.
const DefaultTimeout = 100 * time.Millisecond

// ClientOption configures New.
type ClientOption func(*Client)

// WithBackend skips the probe: every call is sent to b (BackendModule or
// BackendLibrary), and a call the server does not know is not re-detected.
func WithBackend(b Backend) ClientOption { return func(c *Client) { c.forced = b } }

// WithPipeliner gives Pipeline.Exec your client's own pipelining. Without
// it (and without a Doer that is also a Pipeliner) a batch is sent one
// command at a time.
func WithPipeliner(p Pipeliner) ClientOption { return func(c *Client) { c.pipe = p } }

// WithTimeout sets every call's deadline (DefaultTimeout, 100 ms, without
// it): the detection, the command and, when the server has lost the command,
// the one resend all fit in it, and the call returns by then whatever the
// Doer does (a Doer that honours its context's deadline frees its connection
// at the same time). A context with an earlier deadline wins. d <= 0 leaves
// calls without a deadline of their own.
func WithTimeout(d time.Duration) ClientOption { return func(c *Client) { c.timeout = d } }

// WithFailOpen: when Redis cannot be reached in time (a connection error, the
// deadline, LOADING, MASTERDOWN...), calls answer an allowed Decision
// (Remaining = Limit, RetryAfter = ResetAfter = 0) with Unavailable set to the
// error, and a nil error. RL's own errors (bad arguments, WRONGTYPE, OOM, not
// loaded) are still returned.
func WithFailOpen() ClientOption { return func(c *Client) { c.fail = failOpen } }

// WithFailClosed: when Redis cannot be reached in time, calls answer a
// rejected Decision (Remaining 0, RetryAfter = ResetAfter =
// FailClosedRetryAfter) with Unavailable set, and a nil error. The default,
// without either option, is to return the error.
func WithFailClosed() ClientOption { return func(c *Client) { c.fail = failClosed } }

// Client sends RL's commands through a Doer. It is safe for concurrent use;
// make one per Redis server (or cluster) and keep it.
type Client struct {
	do      Doer
	pipe    Pipeliner
	forced  Backend
	fail    failMode
	timeout time.Duration
	surv    *survival // WithCache, WithFallback; nil when neither is on

	mu       sync.Mutex
	detected int32 // a Backend, 0 until learnt
}

// New makes a Client over d. If d also implements Pipeliner, batches use it.
func New(d Doer, opts ...ClientOption) *Client {
	c := &Client{do: d, timeout: DefaultTimeout}
	if p, ok := d.(Pipeliner); ok {
		c.pipe = p
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Backend gives the backend calls are sent to, learning it from the server
// on the first call (see Detect) and keeping it until a call finds its
// command gone.
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
	return c.redetect(ctx)
}

// Detect asks the server, every time it is called, whether it has the RL
// module (COMMAND INFO rl.gcra) or only the rl Functions library (FUNCTION
// LIST LIBRARYNAME rl), and keeps the answer for the calls that follow. A
// server with neither is an error matching ErrNotLoaded. With WithBackend it
// asks nothing and gives that backend.
func (c *Client) Detect(ctx context.Context) (Backend, error) {
	if c.forced != BackendAuto {
		return c.forced, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.redetect(ctx)
}

// redetect runs the probe with c.mu held, within the client's deadline (a
// call's own, when it comes from one).
func (c *Client) redetect(ctx context.Context) (Backend, error) {
	ctx, cancel := c.deadline(ctx)
	defer cancel()
	b, err := c.detect(ctx)
	atomic.StoreInt32(&c.detected, int32(b))
	return b, err
}

func (c *Client) forget() { atomic.StoreInt32(&c.detected, int32(BackendAuto)) }

func (c *Client) detect(ctx context.Context) (Backend, error) {
	var refused []string
	r, err := c.within(ctx, func(ctx context.Context) (any, error) { return c.do.Do(ctx, "COMMAND", "INFO", "rl.gcra") })
	if err != nil {
		if _, _, ok := splitServerError(err); !ok {
			return BackendAuto, err
		}
		refused = append(refused, "COMMAND INFO: "+err.Error())
	} else if a, ok := r.([]any); ok && len(a) > 0 && a[0] != nil {
		return BackendModule, nil
	}
	r, err = c.within(ctx, func(ctx context.Context) (any, error) {
		return c.do.Do(ctx, "FUNCTION", "LIST", "LIBRARYNAME", "rl")
	})
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
