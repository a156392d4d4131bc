package rl

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// The rules every typed client follows (docs/clients.md), against a fake server.

func wantRefused(t *testing.T, what string, f *fake, err error, says string) {
	t.Helper()
	var ae *ArgumentError
	if !errors.As(err, &ae) || !strings.Contains(ae.Message, says) {
		t.Errorf("%s: %T %v, want an *ArgumentError saying %q", what, err, err, says)
	}
	for _, c := range f.calls {
		if c[0] != "COMMAND" && c[0] != "FUNCTION" {
			t.Errorf("%s: sent %v", what, c)
		}
	}
}

func TestArgumentsCheckedBeforeSending(t *testing.T) {
	year := 365 * 24 * time.Hour
	cases := []struct {
		what string
		call func(c *Client) error
		says string
	}{
		{"limit 0", func(c *Client) error { _, err := c.Fixed(bg, "k", 0, time.Second); return err }, "limit must be an integer from 1 to 9007199254740991, got 0"},
		{"limit 2^53", func(c *Client) error { _, err := c.GCRA(bg, "k", 1<<53, 1, time.Second); return err }, "capacity must be an integer from 1"},
		{"sliding limit over its maximum", func(c *Client) error { _, err := c.Sliding(bg, "k", 100001, time.Second); return err }, "limit must be an integer from 1 to 100000"},
		{"1 ns", func(c *Client) error { _, err := c.Fixed(bg, "k", 1, time.Nanosecond); return err }, "window must be a whole number of milliseconds, got 1ns"},
		{"a bare 60", func(c *Client) error { _, err := c.Fixed(bg, "k", 1, 60); return err }, "got 60ns (a time.Duration counts nanoseconds: for 60 seconds write 60*time.Second)"},
		{"1.5 ms", func(c *Client) error { _, err := c.Fixed(bg, "k", 1, 1500*time.Microsecond); return err }, "whole number of milliseconds, got 1.5ms"},
		{"window 0", func(c *Client) error { _, err := c.Fixed(bg, "k", 1, 0); return err }, "window must be from 1ms"},
		{"window over 10 years", func(c *Client) error { _, err := c.Fixed(bg, "k", 1, 11*year); return err }, "window must be from 1ms to 315360000000ms"},
		{"negative DELAY", func(c *Client) error {
			_, err := c.GCRA(bg, "k", 1, 1, time.Second, Delay(-time.Millisecond))
			return err
		}, "delay must be from 0ms"},
		{"negative cost", func(c *Client) error { _, err := c.Fixed(bg, "k", 1, time.Second, Cost(-1)); return err }, "cost must be an integer from 0"},
		{"DEBIT 0", func(c *Client) error { _, err := c.Fixed(bg, "k", 1, time.Second, Debit(0)); return err }, "debit must be an integer from 1"},
		{"COST twice", func(c *Client) error { _, err := c.Fixed(bg, "k", 1, time.Second, Cost(1), Cost(2)); return err }, "COST given twice"},
		{"COST and REFUND", func(c *Client) error {
			_, err := c.Bucket(bg, "k", 1, 1, time.Second, Cost(1), Refund(1))
			return err
		}, "COST and REFUND exclude each other"},
		{"DEBIT and COST", func(c *Client) error {
			_, err := c.Bucket(bg, "k", 1, 1, time.Second, Debit(1), Cost(1))
			return err
		}, "DEBIT and COST exclude each other"},
		{"DELAY and REFUND", func(c *Client) error {
			_, err := c.GCRA(bg, "k", 1, 1, time.Second, Delay(time.Second), Refund(1))
			return err
		}, "DELAY and REFUND exclude each other"},
		{"an option the command does not take", func(c *Client) error {
			_, err := c.Sliding(bg, "k", 1, time.Second, Debit(1))
			return err
		}, "DEBIT does not apply to RL.SLIDING, which takes COST or REFUND"},
		{"a policy's bad argument", func(c *Client) error {
			_, err := c.All(bg, []KeyPolicy{Key("a", Fixed(1, time.Second)), Key("b", Bucket(0, 1, time.Second))})
			return err
		}, "BUCKET capacity must be an integer from 1"},
		{"a policy's duration not whole ms", func(c *Client) error {
			_, err := c.All(bg, []KeyPolicy{Key("a", Fixed(1, time.Second)), Key("b", GCRA(1, 1, time.Second, Delay(time.Microsecond)))})
			return err
		}, "GCRA delay must be a whole number of milliseconds, got 1µs"},
		{"a policy option it does not take", func(c *Client) error {
			_, err := c.All(bg, []KeyPolicy{Key("a", GCRA(1, 1, time.Second, Cost(1)))})
			return err
		}, "COST does not apply to GCRA, which takes DELAY"},
		{"no keys", func(c *Client) error { _, err := c.All(bg, nil); return err }, "RL.ALL takes 1 to 16 keys, got 0"},
		{"17 keys", func(c *Client) error {
			checks := make([]KeyPolicy, 17)
			for i := range checks {
				checks[i] = Key("k", Fixed(1, time.Second))
			}
			_, err := c.All(bg, checks)
			return err
		}, "RL.ALL takes 1 to 16 keys, got 17"},
		{"a key without a policy", func(c *Client) error { _, err := c.All(bg, []KeyPolicy{{Key: "k"}}); return err }, "key 1 (k) has no policy"},
		{"an empty lease id", func(c *Client) error { _, err := c.Acquire(bg, "k", 1, time.Second, ""); return err }, "id must be 1 to 256 bytes, got 0"},
		{"a bad policy name", func(c *Client) error {
			_, err := c.All(bg, []KeyPolicy{Key("k", Fixed(1, time.Second).Named("caf\u00e9"))})
			return err
		}, "outside printable ASCII"},
	}
	for _, tc := range cases {
		f := &fake{module: true}
		wantRefused(t, tc.what, f, tc.call(New(f)), tc.says)
	}
	// The same in a pipeline: that call's error, nothing sent.
	f := &fake{module: true}
	p := New(f).Pipeline()
	r := p.Fixed("k", 1, time.Second, Cost(1), Cost(2))
	err := p.Exec(bg)
	_, rerr := r.Result()
	if err == nil {
		t.Error("pipelined: Exec hid the error")
	}
	wantRefused(t, "pipelined", f, rerr, "COST given twice")
	// The edges are taken: DELAY 0, 10 years, COST 0.
	c := New(&fake{module: true})
	if _, err := c.GCRA(bg, "k", 1, 1, 3650*24*time.Hour, Delay(0)); err != nil {
		t.Errorf("DELAY 0 and a 10-year period: %v", err)
	}
	if _, err := c.Fixed(bg, "k", 1, time.Millisecond, Cost(0)); err != nil {
		t.Errorf("1 ms and COST 0: %v", err)
	}
}

func TestParseDurationWholeMilliseconds(t *testing.T) {
	for _, s := range []string{"1.5ms", "1ns", "1500us"} {
		_, err := ParseDuration(s)
		var ae *ArgumentError
		if !errors.As(err, &ae) {
			t.Errorf("ParseDuration(%q): %v, want an *ArgumentError", s, err)
		}
	}
}

// blocking is a Doer that never answers (a hung server, a Doer that ignores
// its context) until released.
type blocking struct{ release chan struct{} }

func (b blocking) Do(context.Context, ...any) (any, error) {
	<-b.release
	return nil, errors.New("released")
}

func TestDeadline(t *testing.T) {
	b := blocking{release: make(chan struct{})}
	defer close(b.release)
	for _, tc := range []struct {
		opts    []ClientOption
		ctx     func() (context.Context, context.CancelFunc)
		timeout time.Duration
	}{
		{nil, func() (context.Context, context.CancelFunc) { return bg, func() {} }, DefaultTimeout},
		{[]ClientOption{WithTimeout(30 * time.Millisecond)}, func() (context.Context, context.CancelFunc) { return bg, func() {} }, 30 * time.Millisecond},
		{nil, func() (context.Context, context.CancelFunc) { return context.WithTimeout(bg, 20*time.Millisecond) }, 20 * time.Millisecond},
	} {
		c := New(b, append([]ClientOption{WithBackend(BackendModule)}, tc.opts...)...)
		ctx, cancel := tc.ctx()
		start := time.Now()
		_, err := c.GCRA(ctx, "k", 5, 1, time.Second)
		took := time.Since(start)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || took < tc.timeout || took > tc.timeout+100*time.Millisecond {
			t.Errorf("deadline %v: %v after %v", tc.timeout, err, took)
		}
		// A pipeline too; under fail-closed its calls are denied.
		c = New(b, append([]ClientOption{WithBackend(BackendModule), WithFailClosed()}, tc.opts...)...)
		p := c.Pipeline()
		r := p.GCRA("k", 5, 1, time.Second)
		ctx, cancel = tc.ctx()
		start = time.Now()
		err = p.Exec(ctx)
		took = time.Since(start)
		cancel()
		d, rerr := r.Result()
		if err != nil || rerr != nil || d.Allowed || !errors.Is(d.Unavailable, context.DeadlineExceeded) || took > tc.timeout+100*time.Millisecond {
			t.Errorf("pipelined, deadline %v: %v %v %v after %v", tc.timeout, err, d, rerr, took)
		}
	}
	// Detection is within the deadline too, asked for or on a call.
	start := time.Now()
	if _, err := New(b, WithTimeout(20*time.Millisecond)).Detect(bg); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 120*time.Millisecond {
		t.Errorf("Detect: %v after %v", err, time.Since(start))
	}
	c := New(b, WithTimeout(20*time.Millisecond), WithFailOpen())
	d, err := c.Fixed(bg, "k", 3, time.Second)
	if err != nil || !d.Allowed || d.Remaining != 3 || d.Unavailable == nil {
		t.Errorf("detection past the deadline, fail-open: %v %v", d, err)
	}
}

// lost is a fake server that lost the module and has the library: RL.* is
// an unknown command.
func lost() *fake {
	f := &fake{library: true}
	f.reply = func(args []any) (any, error) {
		if s, _ := args[0].(string); strings.HasPrefix(s, "RL.") {
			return nil, replyErr("ERR unknown command '" + s + "', with args beginning with: ")
		}
		return decisionReply(1, 5, 4, 0, 1000), nil
	}
	return f
}

func TestRedetectedAndResentOnce(t *testing.T) {
	f := lost()
	c := New(f)
	c.detected = int32(BackendModule) // detected before the server lost the module
	d, err := c.GCRA(bg, "k", 5, 1, time.Second)
	if err != nil || !d.Allowed {
		t.Fatalf("%v %v", d, err)
	}
	if f.count("RL.GCRA") != 1 || f.count("FCALL") != 1 || f.count("COMMAND") != 1 {
		t.Fatalf("sent %v", f.calls)
	}
	// The pipeline: the lost calls are sent once more, in one batch.
	f = lost()
	pf := &fakePipe{fake: f}
	c = New(pf)
	c.detected = int32(BackendModule)
	p := c.Pipeline()
	a, b := p.GCRA("a", 5, 1, time.Second), p.Fixed("b", 5, time.Second)
	if err := p.Exec(bg); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Result(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Result(); err != nil {
		t.Fatal(err)
	}
	if pf.batches != 2 || f.count("FCALL") != 2 {
		t.Fatalf("batches %d, sent %v", pf.batches, f.calls)
	}
	// A command still missing after a new detection: this RL predates it.
	f = &fake{module: true, reply: func(args []any) (any, error) {
		return nil, replyErr("ERR unknown command 'RL.SHARE', with args beginning with: ")
	}}
	_, err = New(f).Share(bg, "k", "t", 1, 10, 1, time.Second)
	if !errors.Is(err, ErrUnsupported) || errors.Is(err, ErrNotLoaded) || f.count("RL.SHARE") != 2 {
		t.Fatalf("still missing: %v, sent %v", err, f.calls)
	}
	// Forced to a backend: no detection, no resend.
	f = lost()
	_, err = New(f, WithBackend(BackendModule)).GCRA(bg, "k", 5, 1, time.Second)
	if !errors.Is(err, ErrNotLoaded) || f.count("RL.GCRA") != 1 || f.count("COMMAND") != 0 {
		t.Fatalf("forced: %v, sent %v", err, f.calls)
	}
}

func TestDetectAsksEveryTime(t *testing.T) {
	f := &fake{module: true}
	c := New(f)
	for i := 1; i <= 3; i++ {
		if b, err := c.Detect(bg); err != nil || b != BackendModule || f.count("COMMAND") != i {
			t.Fatalf("detect %d: %v %v, %d probes", i, b, err, f.count("COMMAND"))
		}
	}
	f.module, f.library = false, true
	if b, err := c.Detect(bg); err != nil || b != BackendLibrary {
		t.Fatalf("after the switch: %v %v", b, err)
	}
	if b, _ := c.Backend(bg); b != BackendLibrary {
		t.Fatalf("Backend kept %v", b)
	}
}

func TestHeaderRules(t *testing.T) {
	huge := Decision{Allowed: true, Limit: 1 << 60, Remaining: 1 << 60, ResetAfter: time.Second, Window: time.Second}
	if got := huge.Headers().Get("RateLimit-Policy"); got != `"default";q=999999999999999;w=1` {
		t.Errorf("clamped: %s", got)
	}
	if got := huge.Headers().Get("RateLimit"); got != `"default";r=999999999999999;t=1` {
		t.Errorf("clamped: %s", got)
	}
	unknown := Decision{Allowed: true, Limit: 3, Remaining: 2}
	if got := unknown.Headers().Get("RateLimit-Policy"); got != `"default";q=3` {
		t.Errorf("no window: %s", got)
	}
	named, err := unknown.Named(`a "b" \c`)
	if err != nil || named.Headers().Get("RateLimit-Policy") != `"a \"b\" \\c";q=3` || named.Name() != `a "b" \c` {
		t.Errorf("escaped: %v %v", named.Headers(), err)
	}
	for _, bad := range []string{"a\r\nb", "caf\u00e9", "\x7f", "tab\t"} {
		var ae *ArgumentError
		if _, err := unknown.Named(bad); !errors.As(err, &ae) {
			t.Errorf("name %q: %v", bad, err)
		}
	}
	// RL.ALL: one member per policy, named by word, -N when repeated, or as named.
	f := &fake{module: true}
	a, err := New(f).All(bg, []KeyPolicy{
		Key("a", Fixed(10, time.Second)), Key("b", GCRA(5, 1, time.Second)),
		Key("c", Fixed(100, time.Minute)), Key("d", Bucket(2, 1, time.Second).Named("burst")),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := `"fixed-1";q=5;w=1, "gcra";q=5;w=5, "fixed-3";q=5;w=60, "burst";q=5;w=2`
	if got := a.Headers().Get("RateLimit-Policy"); got != want {
		t.Errorf("RL.ALL: %s\nwant %s", got, want)
	}
	// Fail-closed RL.ALL: each key its own limit and window, Retry-After: 1.
	c := New(&fake{down: errors.New("connection refused")}, WithFailClosed())
	a, err = c.All(bg, []KeyPolicy{Key("a", GCRA(50, 1, time.Second)), Key("b", Fixed(3, time.Minute))})
	h := a.Headers()
	if err != nil || h.Get("RateLimit-Policy") != `"gcra";q=50;w=50, "fixed";q=3;w=60` ||
		h.Get("RateLimit") != `"gcra";r=0;t=1, "fixed";r=0;t=1` || h.Get("Retry-After") != "1" {
		t.Errorf("fail-closed RL.ALL: %v %v", h, err)
	}
}
