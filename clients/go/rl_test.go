package rl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

var bg = context.Background()

func TestVersionIsTheModules(t *testing.T) {
	f, err := os.Open("../../Cargo.toml")
	if err != nil {
		t.Fatalf("the repository's Cargo.toml: %v", err)
	}
	defer f.Close()
	section, version := "", ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			section = line
			continue
		}
		if section == "[package]" && strings.HasPrefix(line, "version") {
			if _, v, ok := strings.Cut(line, "="); ok {
				version = strings.Trim(strings.TrimSpace(v), `"`)
			}
		}
	}
	if version == "" {
		t.Fatal("no version in Cargo.toml's [package]")
	}
	if Version != version {
		t.Fatalf("rl.Version is %q, the module's (Cargo.toml [package]) is %q", Version, version)
	}
}

func TestParseDuration(t *testing.T) {
	good := map[string]time.Duration{
		"1500ms": 1500 * time.Millisecond, "60": time.Minute, "60s": time.Minute, "1m": time.Minute,
		"24h": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "1D": 24 * time.Hour, "5MS": 5 * time.Millisecond,
		"1m30s": 90 * time.Second, "1.5s": 1500 * time.Millisecond, " 2s ": 2 * time.Second, "0": 0,
	}
	for s, want := range good {
		got, err := ParseDuration(s)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "abc", "1y", "ms", "1 m", "99999999999999999999d"} {
		if d, err := ParseDuration(s); err == nil {
			t.Errorf("ParseDuration(%q) = %v, want an error", s, d)
		}
	}
	if MustDuration("1m") != time.Minute {
		t.Error("MustDuration(1m)")
	}
	defer func() {
		if recover() == nil {
			t.Error("MustDuration(bad) did not panic")
		}
	}()
	MustDuration("bad")
}

func TestHeaders(t *testing.T) {
	rejected := Decision{Allowed: false, Limit: 10, Remaining: 0, RetryAfter: 1500 * time.Millisecond,
		ResetAfter: 59001 * time.Millisecond, Window: time.Minute}
	want := [][2]string{
		{"RateLimit-Policy", `"default";q=10;w=60`},
		{"RateLimit", `"default";r=0;t=60`},
		{"Retry-After", "2"},
		{"X-RateLimit-Limit", "10"},
		{"X-RateLimit-Remaining", "0"},
		{"X-RateLimit-Reset", "60"},
	}
	if got := rejected.HeaderPairs(); !reflect.DeepEqual(got, want) {
		t.Fatalf("HeaderPairs = %q, want %q", got, want)
	}
	h := rejected.Headers()
	for _, kv := range want {
		if got := h.Get(kv[0]); got != kv[1] {
			t.Errorf("Headers().Get(%q) = %q, want %q", kv[0], got, kv[1])
		}
	}
	if len(h) != len(want) {
		t.Errorf("Headers has %d fields: %v", len(h), h)
	}

	allowed := Decision{Allowed: true, Limit: 5, Remaining: 4, ResetAfter: 1000 * time.Millisecond, Window: 500 * time.Millisecond}
	allowed.SetHeaders(h) // over the rejected one's: no Retry-After left
	if h.Get("Retry-After") != "" {
		t.Errorf("an allowed decision left Retry-After: %v", h)
	}
	if got := h.Get("RateLimit-Policy"); got != `"default";q=5;w=1` {
		t.Errorf("a 500ms window: RateLimit-Policy %q", got)
	}
	if got := h.Get("RateLimit"); got != `"default";r=4;t=1` {
		t.Errorf("RateLimit %q", got)
	}
	never := Decision{Allowed: false, Limit: 5, RetryAfter: Never, Window: time.Second}
	if never.Headers().Get("Retry-After") != "" || never.Retryable() {
		t.Error("a call that can never pass has no Retry-After")
	}
	if !strings.Contains(never.String(), "retry_after=never") {
		t.Errorf("String: %s", never)
	}
}

func TestModuleDetectedOnceAndCommandsRendered(t *testing.T) {
	f := &fake{module: true}
	c := New(f)
	for i := 0; i < 3; i++ {
		d, err := c.GCRA(bg, "k", 5, 1, time.Second, Cost(2), Delay(3*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if !d.Allowed || d.Limit != 5 || d.Remaining != 4 || d.RetryAfter != 0 || d.ResetAfter != time.Second || d.Window != 5*time.Second {
			t.Fatalf("decision %+v", d)
		}
	}
	if n := f.count("COMMAND"); n != 1 {
		t.Fatalf("COMMAND INFO sent %d times, want once", n)
	}
	if n := f.count("FUNCTION"); n != 0 {
		t.Fatalf("FUNCTION LIST sent %d times on a module server", n)
	}
	want := []any{"RL.GCRA", "k", int64(5), int64(1), "1000ms", "COST", int64(2), "DELAY", "3000ms"}
	if got := f.last(); !reflect.DeepEqual(got, want) {
		t.Fatalf("sent %v, want %v", got, want)
	}
	if b, _ := c.Backend(bg); b != BackendModule {
		t.Fatalf("backend %v", b)
	}
}

func TestLibraryDetectedAndFCALL(t *testing.T) {
	f := &fake{library: true}
	c := New(f)
	if _, err := c.Fixed(bg, "k", 10, time.Minute, Refund(1)); err != nil {
		t.Fatal(err)
	}
	want := []any{"FCALL", "rl_fixed", int64(1), "k", int64(10), "60000ms", "REFUND", int64(1)}
	if got := f.last(); !reflect.DeepEqual(got, want) {
		t.Fatalf("sent %v, want %v", got, want)
	}
	if _, err := c.Release(bg, "k", "id"); err != nil {
		t.Fatal(err)
	}
	if got := f.last(); !reflect.DeepEqual(got, []any{"FCALL", "rl_release", int64(1), "k", "id"}) {
		t.Fatalf("sent %v", got)
	}
	if f.count("COMMAND") != 1 || f.count("FUNCTION") != 1 {
		t.Fatalf("probes: %v", f.calls)
	}
	// CL.THROTTLE has no function: a typed error, nothing sent.
	n := len(f.calls)
	if _, err := c.Throttle(bg, "k", 0, 1, 2*time.Second, 1); !errors.Is(err, ErrModuleOnly) {
		t.Fatalf("Throttle on the library: %v", err)
	}
	if len(f.calls) != n {
		t.Fatal("Throttle sent something to the library")
	}
}

func TestNotLoaded(t *testing.T) {
	f := &fake{}
	c := New(f)
	_, err := c.Fixed(bg, "k", 1, time.Second)
	if !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("err %v, want ErrNotLoaded", err)
	}
	for _, hint := range []string{"--loadmodule", "FUNCTION LOAD", "functions/rl.lua", "make load-library"} {
		if !strings.Contains(err.Error(), hint) {
			t.Errorf("the error does not say %q: %v", hint, err)
		}
	}
	if f.count("RL.FIXED") != 0 {
		t.Fatal("a command was sent to a server without RL")
	}
	// Not kept: once the module is there, the next call finds it.
	f.module = true
	if _, err := c.Fixed(bg, "k", 1, time.Second); err != nil {
		t.Fatalf("after loading: %v", err)
	}
	if f.count("COMMAND") != 2 {
		t.Fatalf("probes: %v", f.calls)
	}
	// A server that lost RL: the call's "unknown command" makes the client
	// detect again at once, which finds nothing: ErrNotLoaded, and the next
	// call probes again.
	f.module = false
	f.reply = func(args []any) (any, error) {
		return nil, replyErr("ERR unknown command 'RL.FIXED', with args beginning with: 'k' ")
	}
	if _, err := c.Fixed(bg, "k", 1, time.Second); !errors.Is(err, ErrNotLoaded) || f.count("COMMAND") != 3 {
		t.Fatalf("unknown command: %v %v", err, f.calls)
	}
	if _, err := c.Fixed(bg, "k", 1, time.Second); !errors.Is(err, ErrNotLoaded) || f.count("COMMAND") != 4 {
		t.Fatalf("not probed again: %v %v", err, f.calls)
	}
}

func TestForcedBackendSkipsTheProbe(t *testing.T) {
	f := &fake{}
	c := New(f, WithBackend(BackendLibrary))
	if _, err := c.Bucket(bg, "k", 10, 1, time.Second); err != nil {
		t.Fatal(err)
	}
	if f.count("COMMAND")+f.count("FUNCTION") != 0 {
		t.Fatalf("probed: %v", f.calls)
	}
	if f.last()[0] != "FCALL" {
		t.Fatalf("sent %v", f.last())
	}
}

func TestErrorsTyped(t *testing.T) {
	cases := []struct {
		reply string
		check func(error) bool
	}{
		{"ERR limit must be an integer from 1 to 9007199254740991", func(err error) bool {
			var ae *ArgumentError
			return errors.As(err, &ae) && ae.Command == "RL.FIXED" &&
				ae.Message == "limit must be an integer from 1 to 9007199254740991" &&
				strings.Contains(err.Error(), "ERR limit must be")
		}},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", func(err error) bool {
			var se *ServerError
			return errors.Is(err, ErrWrongType) && !errors.Is(err, ErrOOM) && errors.As(err, &se) && se.Code == "WRONGTYPE"
		}},
		{"OOM command not allowed when used memory > 'maxmemory'.", func(err error) bool {
			return errors.Is(err, ErrOOM) && !errors.Is(err, ErrWrongType)
		}},
		{"NOPERM this user has no permissions to run the 'rl.fixed' command", func(err error) bool {
			var se *ServerError
			return errors.As(err, &se) && se.Code == "NOPERM"
		}},
		{"ERR internal error in RL.FIXED; nothing was changed (please report this)", func(err error) bool {
			var se *ServerError
			var ae *ArgumentError
			return errors.As(err, &se) && !errors.As(err, &ae)
		}},
	}
	for _, tc := range cases {
		reply := replyErr(tc.reply)
		c := New(&fake{module: true, reply: func([]any) (any, error) { return nil, reply }})
		_, err := c.Fixed(bg, "k", 1, time.Second)
		if err == nil || !tc.check(err) {
			t.Errorf("%q became %T %v", tc.reply, err, err)
		}
		if !errors.Is(err, reply) {
			t.Errorf("%q: the client's error is not wrapped: %v", tc.reply, err)
		}
	}
	// RL.SHARE on an RL that predates it.
	c := New(&fake{module: true, reply: func([]any) (any, error) {
		return nil, replyErr("ERR unknown command 'RL.SHARE', with args beginning with: ")
	}})
	if _, err := c.Share(bg, "k", "t", 1, 10, 1, time.Second); !errors.Is(err, ErrUnsupported) || errors.Is(err, ErrNotLoaded) {
		t.Errorf("RL.SHARE unknown: %v", err)
	}
	// go-redis marks its replies; a marked error is a server error whatever its text.
	c = New(&fake{module: true, reply: func([]any) (any, error) { return nil, markedErr("WRONGTYPE x") }})
	if _, err := c.Fixed(bg, "k", 1, time.Second); !errors.Is(err, ErrWrongType) {
		t.Errorf("a go-redis style error: %v", err)
	}
}

type markedErr string

func (e markedErr) Error() string { return string(e) }
func (markedErr) RedisError()     {}

func TestFailModes(t *testing.T) {
	down := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	// Default: the error, untouched.
	c := New(&fake{down: down})
	if _, err := c.GCRA(bg, "k", 5, 1, time.Second); err != down {
		t.Fatalf("default: %v", err)
	}
	// Open.
	c = New(&fake{down: down}, WithFailOpen())
	d, err := c.GCRA(bg, "k", 5, 1, time.Second)
	if err != nil || !d.Allowed || d.Limit != 5 || d.Remaining != 5 || d.Unavailable != down || d.Window != 5*time.Second {
		t.Fatalf("open: %+v %v", d, err)
	}
	// Closed.
	c = New(&fake{down: down}, WithFailClosed())
	d, err = c.GCRA(bg, "k", 5, 1, time.Second)
	if err != nil || d.Allowed || d.Remaining != 0 || d.RetryAfter != FailClosedRetryAfter || d.Unavailable != down {
		t.Fatalf("closed: %+v %v", d, err)
	}
	all, err := c.All(bg, []KeyPolicy{Key("a", Fixed(3, time.Minute)), Key("b", Bucket(9, 1, time.Second))})
	if err != nil || all.Allowed || len(all.Keys) != 2 || all.Keys[1].Window != 9*time.Second || all.Limit != 3 || all.Keys[1].Limit != 9 {
		t.Fatalf("closed RL.ALL: %+v %v", all, err)
	}
	// RL's own errors are never turned into a decision.
	c = New(&fake{module: true, reply: func([]any) (any, error) { return nil, replyErr("ERR limit must be") }}, WithFailOpen())
	if _, err := c.Fixed(bg, "k", 0, time.Second); err == nil {
		t.Fatal("fail-open swallowed an argument error")
	}
	c = New(&fake{}, WithFailOpen())
	if _, err := c.Fixed(bg, "k", 1, time.Second); !errors.Is(err, ErrNotLoaded) {
		t.Fatal("fail-open swallowed not loaded")
	}
	// A cancelled call is the caller's doing, not an outage.
	c = New(&fake{down: context.Canceled}, WithFailOpen())
	if _, err := c.Fixed(bg, "k", 1, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestAllRenderedAndParsed(t *testing.T) {
	f := &fake{module: true}
	f.reply = func(args []any) (any, error) {
		return []any{
			decisionReply(0, 5, 0, 1000, 60000),
			decisionReply(1, 10, 3, 0, 2000),
			decisionReply(0, 5, 0, 1000, 60000),
		}, nil
	}
	c := New(f)
	checks := []KeyPolicy{
		Key("{u}:a", Bucket(10, 1, time.Second)),
		Key("{u}:b", GCRA(5, 1, time.Minute, Delay(2*time.Second))),
	}
	d, err := c.All(bg, checks, Cost(2))
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"RL.ALL", int64(2), "{u}:a", "{u}:b", "BUCKET", int64(10), int64(1), "1000ms",
		"GCRA", int64(5), int64(1), "60000ms", "DELAY", "2000ms", "COST", int64(2)}
	if got := f.last(); !reflect.DeepEqual(got, want) {
		t.Fatalf("sent %v\nwant %v", got, want)
	}
	// A bucket's window is its time to refill from empty: capacity * period / tokens.
	if d.Allowed || d.Remaining != 0 || d.Window != 5*time.Minute || len(d.Keys) != 2 ||
		!d.Keys[0].Allowed || d.Keys[0].Window != 10*time.Second || d.Keys[1].Allowed {
		t.Fatalf("decision %+v", d)
	}
	f.library, f.module = true, false
	c = New(f)
	if _, err := c.All(bg, checks, Cost(2)); err != nil {
		t.Fatal(err)
	}
	if got := f.last(); !reflect.DeepEqual(got, append([]any{"FCALL", "rl_all"}, want[1:]...)) {
		t.Fatalf("library sent %v", got)
	}
}

func TestThrottleReply(t *testing.T) {
	replies := [][]any{decisionReply(0, 16, 15, -1, 2), decisionReply(1, 1, 0, 2, 3), decisionReply(1, 1, 1, -1, 0)}
	i := 0
	c := New(&fake{module: true, reply: func([]any) (any, error) { i++; return replies[i-1], nil }})
	d, _ := c.Throttle(bg, "k", 15, 30, time.Minute, 1)
	if !d.Allowed || d.Limit != 16 || d.Remaining != 15 || d.RetryAfter != 0 || d.ResetAfter != 2*time.Second || d.Window != 32*time.Second {
		t.Fatalf("allowed: %+v", d)
	}
	d, _ = c.Throttle(bg, "k", 0, 1, time.Minute, 1)
	if d.Allowed || d.RetryAfter != 2*time.Second || d.ResetAfter != 3*time.Second {
		t.Fatalf("limited: %+v", d)
	}
	d, _ = c.Throttle(bg, "k", 0, 1, time.Minute, 5)
	if d.Allowed || d.RetryAfter != Never {
		t.Fatalf("quantity over the limit: %+v", d)
	}
}

func TestPipeline(t *testing.T) {
	f := &fake{module: true}
	f.reply = func(args []any) (any, error) {
		switch args[0] {
		case "RL.FIXED":
			return nil, replyErr("ERR limit must be an integer from 1 to 9007199254740991")
		case "RL.RELEASE":
			return int64(0), nil
		case "RL.ALL":
			return []any{decisionReply(1, 5, 4, 0, 1), decisionReply(1, 5, 4, 0, 1)}, nil
		}
		return decisionReply(1, 5, 4, 0, 1000), nil
	}
	for _, piped := range []bool{true, false} {
		t.Run(fmt.Sprintf("pipeliner=%v", piped), func(t *testing.T) {
			fp := &fakePipe{fake: f}
			var c *Client
			if piped {
				c = New(f, WithPipeliner(fp))
			} else {
				c = New(f)
			}
			p := c.Pipeline()
			g := make([]*Pending[Decision], 10)
			for i := range g {
				g[i] = p.GCRA(fmt.Sprint("k", i), 5, 1, time.Second)
			}
			bad := p.Fixed("k", 0, time.Second)
			all := p.All([]KeyPolicy{Key("a", Sliding(5, time.Second))})
			rel := p.Release("k", "id")
			thr := p.Throttle("k", 1, 1, time.Second, 1)
			if _, err := g[0].Result(); err == nil {
				t.Fatal("a result before Exec")
			}
			if p.Len() != 14 {
				t.Fatalf("Len %d", p.Len())
			}
			err := p.Exec(bg)
			var ae *ArgumentError
			if !errors.As(err, &ae) {
				t.Fatalf("Exec: %v, want the bad call's error", err)
			}
			for _, r := range g {
				if d, err := r.Result(); err != nil || !d.Allowed || d.Remaining != 4 {
					t.Fatalf("%+v %v", d, err)
				}
			}
			if _, err := bad.Result(); !errors.As(err, &ae) {
				t.Fatalf("bad: %v", err)
			}
			if d, err := all.Result(); err != nil || !d.Allowed || len(d.Keys) != 1 {
				t.Fatalf("all: %+v %v", d, err)
			}
			if ok, err := rel.Result(); err != nil || ok {
				t.Fatalf("release: %v %v", ok, err)
			}
			if d, err := thr.Result(); err != nil || d.Allowed {
				// the default reply read as CL.THROTTLE's: limited 1
				t.Fatalf("throttle: %+v %v", d, err)
			}
			if piped && fp.batches != 1 {
				t.Fatalf("%d batches", fp.batches)
			}
			if p.Len() != 0 || p.Exec(bg) != nil {
				t.Fatal("not emptied by Exec")
			}
		})
	}
	// An outage under fail-open: every call decided, no error.
	fp := &fakePipe{fake: &fake{module: true}}
	c := New(fp.fake, WithPipeliner(fp), WithFailOpen(), WithBackend(BackendModule))
	fp.fake.down = errors.New("read tcp: i/o timeout")
	p := c.Pipeline()
	r := p.GCRA("k", 5, 1, time.Second)
	if err := p.Exec(bg); err != nil {
		t.Fatal(err)
	}
	if d, err := r.Result(); err != nil || !d.Allowed || d.Unavailable == nil {
		t.Fatalf("%+v %v", d, err)
	}
}

func TestLeaseReleasesOnce(t *testing.T) {
	f := &fake{module: true}
	c := New(f)
	func() {
		lease, err := c.Acquire(bg, "k", 2, time.Minute, "job-1")
		if err != nil || !lease.Allowed {
			t.Fatalf("%+v %v", lease, err)
		}
		ctx, cancel := context.WithCancel(bg)
		cancel() // the request is over: the release must still go out
		defer lease.Release(ctx)
	}()
	if got := f.last(); !reflect.DeepEqual(got, []any{"RL.RELEASE", "k", "job-1"}) {
		t.Fatalf("deferred release sent %v", got)
	}
	if err := f.ctxErrs[len(f.ctxErrs)-1]; err != nil {
		t.Fatalf("the release saw a cancelled context: %v", err)
	}
	lease, _ := c.Acquire(bg, "k", 2, time.Minute, "job-2")
	if ok, err := lease.Release(bg); !ok || err != nil {
		t.Fatal(ok, err)
	}
	n := f.count("RL.RELEASE")
	if ok, _ := lease.Release(bg); ok || f.count("RL.RELEASE") != n {
		t.Fatal("released twice")
	}
	// A rejected lease holds nothing to give back.
	f.reply = func([]any) (any, error) { return decisionReply(0, 2, 0, 5000, 60000), nil }
	lease, _ = c.Acquire(bg, "k", 2, time.Minute, "job-3")
	if ok, err := lease.Release(bg); ok || err != nil || f.count("RL.RELEASE") != n {
		t.Fatal("a rejected lease was released")
	}
}

func TestUnexpectedReply(t *testing.T) {
	c := New(&fake{module: true, reply: func([]any) (any, error) { return "OK", nil }})
	if _, err := c.Fixed(bg, "k", 1, time.Second); err == nil || !strings.Contains(err.Error(), "unexpected reply") {
		t.Fatalf("%v", err)
	}
}

// A pipeline boxes repeated values once: every call must still send its own.
func TestPipelineSendsEachCallsOwnValues(t *testing.T) {
	f := &fake{module: true}
	fp := &fakePipe{fake: f}
	c := New(f, WithPipeliner(fp), WithBackend(BackendModule))
	p := c.Pipeline()
	var want [][]any
	for round := 0; round < 2; round++ { // the second reuses the pipeline's buffers
		for i := 0; i < 40; i++ {
			capacity := int64(1000 + i%7)
			tokens := int64(300 + i%5)
			period := time.Duration(1+i%3) * time.Second
			key := fmt.Sprint("k", i)
			p.GCRA(key, capacity, tokens, period, Cost(int64(500+i%6)))
			want = append(want, []any{"RL.GCRA", key, capacity, tokens, fmt.Sprintf("%dms", period/time.Millisecond), "COST", int64(500 + i%6)})
		}
		p.Fixed("f", 2000, time.Duration(round+5)*time.Minute)
		want = append(want, []any{"RL.FIXED", "f", int64(2000), fmt.Sprintf("%dms", (round+5)*60000)})
		if err := p.Exec(bg); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(f.calls, want) {
		for i := range want {
			if i >= len(f.calls) || !reflect.DeepEqual(f.calls[i], want[i]) {
				t.Fatalf("call %d sent %v, want %v", i, f.calls[i], want[i])
			}
		}
		t.Fatalf("%d calls sent, want %d", len(f.calls), len(want))
	}
}
