package itest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	rl "github.com/rl-rate/rl/clients/go"
)

var ctx = context.Background()

// server is one of the two harness servers (scripts/clients.sh): one with the
// module, one with only the Functions library.
type server struct {
	name    string
	url     string
	backend rl.Backend
}

func servers(t *testing.T) []server {
	var out []server
	if u := os.Getenv("RL_TEST_MODULE_URL"); u != "" {
		out = append(out, server{"module", u, rl.BackendModule})
	}
	if u := os.Getenv("RL_TEST_LIBRARY_URL"); u != "" {
		out = append(out, server{"library", u, rl.BackendLibrary})
	}
	if len(out) == 0 {
		if os.Getenv("RL_TEST_REQUIRE") != "" {
			t.Fatal("RL_TEST_MODULE_URL and RL_TEST_LIBRARY_URL are not set: run scripts/clients.sh go")
		}
		t.Skip("RL_TEST_MODULE_URL / RL_TEST_LIBRARY_URL not set: run scripts/clients.sh go")
	}
	return out
}

// env is one test on one server.
type env struct {
	t       *testing.T
	srv     server
	pool    *redis.Pool
	c       *rl.Client
	prefix  string
	backend rl.Backend
}

var run int64

// each runs fn on both servers, each with a fresh client and key prefix.
func each(t *testing.T, fn func(t *testing.T, e *env)) {
	for _, srv := range servers(t) {
		srv := srv
		t.Run(srv.name, func(t *testing.T) {
			pool := Pool(srv.url)
			t.Cleanup(func() { pool.Close() })
			e := &env{t: t, srv: srv, pool: pool, c: Client(pool), backend: srv.backend,
				prefix: fmt.Sprintf("go:%s:%d:%d:", t.Name(), time.Now().UnixNano(), atomic.AddInt64(&run, 1))}
			fn(t, e)
		})
	}
}

func (e *env) key(name string) string { return e.prefix + name }

// raw sends a command through redigo, failing the test on an error.
func (e *env) raw(cmd string, args ...any) any {
	e.t.Helper()
	conn := e.pool.Get()
	defer conn.Close()
	r, err := conn.Do(cmd, args...)
	if err != nil {
		e.t.Fatalf("%s %v: %v", cmd, args, err)
	}
	return r
}

func (e *env) rawString(cmd string, args ...any) string {
	e.t.Helper()
	s, err := redis.String(e.raw(cmd, args...), nil)
	if err != nil && err != redis.ErrNil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) rawInt(cmd string, args ...any) int64 {
	e.t.Helper()
	n, err := redis.Int64(e.raw(cmd, args...), nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// want checks a decision against allowed, limit, remaining; retry and reset
// within [lo, hi].
type span struct{ lo, hi time.Duration }

func exactly(d time.Duration) span { return span{d, d} }
func within(lo, hi time.Duration) span {
	return span{lo, hi}
}

var never = exactly(rl.Never)

func (e *env) want(what string, d rl.Decision, err error, allowed bool, limit, remaining int64, retry, reset span) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
	if d.Allowed != allowed || d.Limit != limit || d.Remaining != remaining ||
		d.RetryAfter < retry.lo || d.RetryAfter > retry.hi || d.ResetAfter < reset.lo || d.ResetAfter > reset.hi {
		e.t.Fatalf("%s: got %s; want allowed=%v limit=%d remaining=%d retry in [%v, %v] reset in [%v, %v]",
			what, d, allowed, limit, remaining, retry.lo, retry.hi, reset.lo, reset.hi)
	}
	if d.Unavailable != nil {
		e.t.Fatalf("%s: a fallback decision: %v", what, d.Unavailable)
	}
}

func wantArgumentError(t *testing.T, what string, err error, text string) {
	t.Helper()
	var ae *rl.ArgumentError
	if !errors.As(err, &ae) {
		t.Fatalf("%s: got %T %v, want an *rl.ArgumentError", what, err, err)
	}
	if !strings.Contains(ae.Message, text) {
		t.Fatalf("%s: %q does not say %q", what, ae.Message, text)
	}
}

const (
	hour = time.Hour
	day  = 24 * time.Hour
	ms   = time.Millisecond
)

var zero = exactly(0)

// countingDoer counts the probes.
type countingDoer struct {
	rl.Doer
	mu    sync.Mutex
	words map[string]int
}

func (c *countingDoer) Do(ctx context.Context, args ...any) (any, error) {
	c.mu.Lock()
	c.words[args[0].(string)]++
	c.mu.Unlock()
	return c.Doer.Do(ctx, args...)
}

func TestBackendDetectedOnce(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		cd := &countingDoer{Doer: Doer(e.pool), words: map[string]int{}}
		c := rl.New(cd)
		for i := 0; i < 3; i++ {
			if _, err := c.GCRA(ctx, e.key("k"), 5, 1, time.Second); err != nil {
				t.Fatal(err)
			}
		}
		b, err := c.Backend(ctx)
		if err != nil || b != e.backend {
			t.Fatalf("backend %v %v, want %v", b, err, e.backend)
		}
		wantFunction := 0
		if e.backend == rl.BackendLibrary {
			wantFunction = 1
		}
		if cd.words["COMMAND"] != 1 || cd.words["FUNCTION"] != wantFunction {
			t.Fatalf("probes %v", cd.words)
		}
		sent := "RL.GCRA"
		if e.backend == rl.BackendLibrary {
			sent = "FCALL"
		}
		if cd.words[sent] != 3 {
			t.Fatalf("sent %v", cd.words)
		}
	})
}

func TestFixed(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		k := e.key("fixed")
		d, err := e.c.Fixed(ctx, k, 2, day)
		e.want("1st", d, err, true, 2, 1, zero, within(1*ms, day))
		if d.Window != day {
			t.Fatalf("window %v", d.Window)
		}
		d, err = e.c.Fixed(ctx, k, 2, day)
		e.want("2nd", d, err, true, 2, 0, zero, within(1*ms, day))
		d, err = e.c.Fixed(ctx, k, 2, day)
		e.want("3rd", d, err, false, 2, 0, within(1*ms, day), within(1*ms, day))
		if !d.Retryable() {
			t.Fatal("not retryable")
		}
		d, err = e.c.Fixed(ctx, k, 2, day, rl.Cost(0))
		e.want("COST 0", d, err, true, 2, 0, zero, within(1*ms, day))
		d, err = e.c.Fixed(ctx, k, 2, day, rl.Cost(3))
		e.want("COST 3 > limit", d, err, false, 2, 0, never, within(1*ms, day))
		d, err = e.c.Fixed(ctx, k, 2, day, rl.Refund(1))
		e.want("REFUND 1", d, err, true, 2, 1, zero, within(1*ms, day))
		d, err = e.c.Fixed(ctx, k, 2, day, rl.Debit(3))
		e.want("DEBIT 3", d, err, true, 2, 0, zero, within(1*ms, day))
		if got := e.rawString("GET", k); got != "4" {
			t.Fatalf("GET %s = %q, want 4 (2 - 1 + 3)", k, got)
		}
		d, err = e.c.Fixed(ctx, k, 2, day)
		e.want("in debt", d, err, false, 2, 0, within(1*ms, day), within(1*ms, day))
		// A duration given as text.
		d, err = e.c.Fixed(ctx, e.key("text"), 5, rl.MustDuration("1m"))
		e.want("1m", d, err, true, 5, 4, zero, within(1*ms, time.Minute))
		if pttl := e.rawInt("PTTL", e.key("text")); pttl <= 0 || pttl > 60000 {
			t.Fatalf("PTTL %d for a 1m window", pttl)
		}
	})
}

func TestSliding(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		k := e.key("sliding")
		d, err := e.c.Sliding(ctx, k, 2, hour)
		e.want("1st", d, err, true, 2, 1, zero, exactly(hour))
		d, err = e.c.Sliding(ctx, k, 2, hour)
		e.want("2nd", d, err, true, 2, 0, zero, within(hour-time.Second, hour))
		d, err = e.c.Sliding(ctx, k, 2, hour)
		e.want("3rd", d, err, false, 2, 0, within(hour-time.Second, hour), within(hour-time.Second, hour))
		d, err = e.c.Sliding(ctx, k, 2, hour, rl.Cost(0))
		e.want("COST 0", d, err, true, 2, 0, zero, within(hour-time.Second, hour))
		d, err = e.c.Sliding(ctx, k, 2, hour, rl.Refund(1))
		e.want("REFUND 1", d, err, true, 2, 1, zero, within(hour-time.Second, hour))
		if n := e.rawInt("ZCARD", k); n != 1 {
			t.Fatalf("ZCARD %d after a refund", n)
		}
		_, err = e.c.Sliding(ctx, k, 2, hour, rl.Debit(1))
		wantArgumentError(t, "DEBIT", err, "DEBIT does not apply to RL.SLIDING, which takes COST or REFUND")
	})
}

func TestSlidingCounter(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		k := e.key("sc")
		d, err := e.c.SlidingCounter(ctx, k, 2, day)
		e.want("1st", d, err, true, 2, 1, zero, within(day, 2*day))
		d, err = e.c.SlidingCounter(ctx, k, 2, day)
		e.want("2nd", d, err, true, 2, 0, zero, within(day, 2*day))
		d, err = e.c.SlidingCounter(ctx, k, 2, day)
		e.want("3rd", d, err, false, 2, 0, within(1*ms, 2*day), within(day, 2*day))
		d, err = e.c.SlidingCounter(ctx, k, 2, day, rl.Refund(1))
		e.want("REFUND 1", d, err, true, 2, 1, zero, within(day, 2*day))
		d, err = e.c.SlidingCounter(ctx, k, 2, day, rl.Debit(2))
		e.want("DEBIT 2", d, err, true, 2, 0, zero, within(day, 2*day))
		d, err = e.c.SlidingCounter(ctx, k, 2, day, rl.Cost(0))
		if err != nil || d.Allowed {
			t.Fatalf("COST 0 in debt: %v %v", d, err)
		}
		if got := strings.Fields(e.rawString("GET", k)); len(got) != 3 || got[1] != "3" {
			t.Fatalf("GET %v, want the current count 3", got)
		}
	})
}

func TestBucket(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		k := e.key("bucket")
		d, err := e.c.Bucket(ctx, k, 2, 1, hour)
		e.want("1st", d, err, true, 2, 1, zero, exactly(hour))
		d, err = e.c.Bucket(ctx, k, 2, 1, hour)
		e.want("2nd", d, err, true, 2, 0, zero, within(2*hour-time.Second, 2*hour))
		d, err = e.c.Bucket(ctx, k, 2, 1, hour)
		e.want("3rd", d, err, false, 2, 0, within(hour-time.Second, hour), within(2*hour-time.Second, 2*hour))
		d, err = e.c.Bucket(ctx, k, 2, 1, hour, rl.Cost(3))
		e.want("COST 3", d, err, false, 2, 0, never, within(2*hour-time.Second, 2*hour))
		d, err = e.c.Bucket(ctx, k, 2, 1, hour, rl.Refund(2))
		e.want("REFUND 2", d, err, true, 2, 2, zero, zero)
		if n := e.rawInt("EXISTS", k); n != 0 {
			t.Fatal("a full bucket is not deleted")
		}
		d, err = e.c.Bucket(ctx, k, 2, 1, hour, rl.Debit(5))
		e.want("DEBIT 5", d, err, true, 2, 0, zero, exactly(5*hour))
		if got := e.rawString("HGET", k, "tokens"); got != "-3" {
			t.Fatalf("tokens %q, want -3", got)
		}
	})
}

func TestGCRA(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		k := e.key("gcra")
		d, err := e.c.GCRA(ctx, k, 2, 1, hour, rl.Cost(3))
		e.want("COST 3", d, err, false, 2, 2, never, zero)
		d, err = e.c.GCRA(ctx, k, 2, 1, hour)
		e.want("1st", d, err, true, 2, 1, zero, exactly(hour))
		d, err = e.c.GCRA(ctx, k, 2, 1, hour)
		e.want("2nd", d, err, true, 2, 0, zero, within(2*hour-time.Second, 2*hour))
		d, err = e.c.GCRA(ctx, k, 2, 1, hour)
		e.want("3rd", d, err, false, 2, 0, within(hour-time.Second, hour), within(2*hour-time.Second, 2*hour))
		d, err = e.c.GCRA(ctx, k, 2, 1, hour, rl.Refund(1))
		e.want("REFUND 1", d, err, true, 2, 1, zero, within(hour-time.Second, hour))
		d, err = e.c.GCRA(ctx, k, 2, 1, hour, rl.Debit(2))
		e.want("DEBIT 2", d, err, true, 2, 0, zero, within(3*hour-time.Second, 3*hour))

		// DELAY: capacity 1, one per hour, a queue of two hours.
		q := e.key("queue")
		d, err = e.c.GCRA(ctx, q, 1, 1, hour, rl.Delay(2*hour))
		e.want("DELAY 1st", d, err, true, 1, 0, zero, exactly(hour))
		d, err = e.c.GCRA(ctx, q, 1, 1, hour, rl.Delay(2*hour))
		e.want("DELAY 2nd waits", d, err, true, 1, 0, within(hour-time.Second, hour), within(2*hour-time.Second, 2*hour))
		d, err = e.c.GCRA(ctx, q, 1, 1, hour, rl.Delay(2*hour))
		e.want("DELAY 3rd waits", d, err, true, 1, 0, within(2*hour-time.Second, 2*hour), within(3*hour-time.Second, 3*hour))
		d, err = e.c.GCRA(ctx, q, 1, 1, hour, rl.Delay(2*hour))
		e.want("DELAY 4th", d, err, false, 1, 0, within(hour-time.Second, hour), within(3*hour-time.Second, 3*hour))
		d, err = e.c.GCRA(ctx, e.key("delay0"), 1, 1, hour, rl.Delay(0), rl.Cost(1))
		e.want("DELAY 0", d, err, true, 1, 0, zero, exactly(hour))
		_, err = e.c.GCRA(ctx, q, 1, 1, hour, rl.Delay(hour), rl.Refund(1))
		wantArgumentError(t, "DELAY with REFUND", err, "DELAY and REFUND exclude each other")
	})
}

func TestThrottle(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		k := e.key("cell")
		d, err := e.c.Throttle(ctx, k, 0, 1, 2*time.Second, 1)
		if e.backend == rl.BackendLibrary {
			if !errors.Is(err, rl.ErrModuleOnly) {
				t.Fatalf("CL.THROTTLE on the library: %v, want ErrModuleOnly", err)
			}
			if !strings.Contains(err.Error(), "GCRA") {
				t.Fatalf("the error does not say what to call instead: %v", err)
			}
			return
		}
		e.want("1st", d, err, true, 1, 0, zero, exactly(2*time.Second))
		d, err = e.c.Throttle(ctx, k, 0, 1, 2*time.Second, 1)
		e.want("2nd", d, err, false, 1, 0, exactly(2*time.Second), exactly(2*time.Second))
		d, err = e.c.Throttle(ctx, e.key("cell2"), 15, 30, time.Minute, 17)
		e.want("quantity > limit", d, err, false, 16, 16, never, zero)
	})
}

func TestAll(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		burst, minute := e.key("{u}:burst"), e.key("{u}:minute")
		checks := []rl.KeyPolicy{rl.Key(burst, rl.GCRA(1, 1, hour)), rl.Key(minute, rl.GCRA(5, 1, hour))}
		d, err := e.c.All(ctx, checks)
		e.want("1st combined", d.Decision, err, true, 1, 0, zero, exactly(hour))
		if len(d.Keys) != 2 || d.Window != hour {
			t.Fatalf("%+v", d)
		}
		e.want("1st key 0", d.Keys[0], nil, true, 1, 0, zero, exactly(hour))
		e.want("1st key 1", d.Keys[1], nil, true, 5, 4, zero, exactly(hour))
		d, err = e.c.All(ctx, checks)
		e.want("2nd combined", d.Decision, err, false, 1, 0, within(hour-time.Second, hour), within(hour-time.Second, hour))
		e.want("2nd key 0", d.Keys[0], nil, false, 1, 0, within(hour-time.Second, hour), within(hour-time.Second, hour))
		e.want("2nd key 1 (would allow)", d.Keys[1], nil, true, 5, 4, zero, within(hour-time.Second, hour))
		// All or nothing: the second key kept its unit.
		g, err := e.c.GCRA(ctx, minute, 5, 1, hour, rl.Cost(0))
		e.want("key 1 after", g, err, true, 5, 4, zero, within(hour-time.Second, hour))

		// Every policy in one call (PENALTY is only looked at).
		p := "{p}:"
		every := []rl.KeyPolicy{
			rl.Key(e.key(p+"fixed"), rl.Fixed(5, day)),
			rl.Key(e.key(p+"sliding"), rl.Sliding(5, hour)),
			rl.Key(e.key(p+"sc"), rl.SlidingCounter(5, day)),
			rl.Key(e.key(p+"bucket"), rl.Bucket(5, 1, hour)),
			rl.Key(e.key(p+"gcra"), rl.GCRA(5, 1, hour, rl.Delay(time.Second))),
			rl.Key(e.key(p+"acquire"), rl.Acquire(5, hour, "job")),
			rl.Key(e.key(p+"penalty"), rl.Penalty(3, time.Minute, time.Minute, hour)),
		}
		d, err = e.c.All(ctx, every, rl.Cost(0))
		if err != nil || !d.Allowed || len(d.Keys) != len(every) {
			t.Fatalf("every policy, COST 0: %+v %v", d, err)
		}
		for i, k := range d.Keys {
			if !k.Allowed || k.Remaining != k.Limit {
				t.Fatalf("key %d under COST 0: %s", i, k)
			}
		}
		// Take 1 from each rate limit, then refund it, then debit 2.
		rates := append([]rl.KeyPolicy(nil), every[:5]...)
		rates[4] = rl.Key(rates[4].Key, rl.GCRA(5, 1, hour)) // DELAY excludes REFUND and DEBIT
		d, err = e.c.All(ctx, rates, rl.Cost(1))
		if err != nil || !d.Allowed || d.Remaining != 4 {
			t.Fatalf("COST 1: %+v %v", d, err)
		}
		d, err = e.c.All(ctx, rates, rl.Refund(1))
		if err != nil || !d.Allowed || d.Remaining != 5 {
			t.Fatalf("REFUND 1: %+v %v", d, err)
		}
		debitable := []rl.KeyPolicy{rates[0], rates[2], rates[3], rates[4]}
		d, err = e.c.All(ctx, debitable, rl.Debit(2))
		if err != nil || !d.Allowed || d.Remaining != 3 {
			t.Fatalf("DEBIT 2: %+v %v", d, err)
		}
		_, err = e.c.All(ctx, rates, rl.Debit(2))
		wantArgumentError(t, "DEBIT with SLIDING", err, "DEBIT does not apply to SLIDING, which takes COST n or REFUND n")
		// A PENALTY policy is only looked at, whatever the amount.
		if _, err = e.c.All(ctx, every, rl.Cost(1)); err != nil {
			t.Fatalf("every policy, COST 1: %v", err)
		}
		// Headers: one member per policy, each with its own key's numbers.
		if got := d.Headers().Get("RateLimit-Policy"); got != `"fixed";q=5;w=86400, "slidingcounter";q=5;w=86400, "bucket";q=5;w=18000, "gcra";q=5;w=18000` {
			t.Fatalf("RateLimit-Policy %q", got)
		}
	})
}

func TestQuota(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		d, err := e.c.Quota(ctx, e.key("quota"), 5, "day", rl.TZ("America/New_York"))
		e.want("a day in New York", d, err, true, 5, 4, zero, within(time.Millisecond, 25*hour))
		_, err = e.c.Quota(ctx, e.key("quota-zone"), 5, "day", rl.TZ("Mars/Olympus"))
		wantArgumentError(t, "a bad zone", err, "unknown time zone 'Mars/Olympus'")
		a, err := e.c.All(ctx, []rl.KeyPolicy{
			rl.Key(e.key("{q}:fixed"), rl.Fixed(3, day)),
			rl.Key(e.key("{q}:quota"), rl.Quota(5, "day", rl.TZ("America/New_York"))),
		})
		if err != nil || !a.Allowed || len(a.Keys) != 2 {
			t.Fatalf("RL.ALL with QUOTA: %+v %v", a, err)
		}
		e.want("RL.ALL quota key", a.Keys[1], nil, true, 5, 4, zero, within(time.Millisecond, 25*hour))
	})
}

func TestAcquireRelease(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		k := e.key("lease")
		a, err := e.c.Acquire(ctx, k, 1, hour, "a")
		if err != nil {
			t.Fatal(err)
		}
		e.want("a", a.Decision, nil, true, 1, 0, zero, exactly(hour))
		b, err := e.c.Acquire(ctx, k, 1, hour, "b")
		if err != nil {
			t.Fatal(err)
		}
		e.want("b", b.Decision, nil, false, 1, 0, within(hour-time.Second, hour), within(hour-time.Second, hour))
		if ok, err := b.Release(ctx); ok || err != nil {
			t.Fatalf("releasing a rejected lease: %v %v", ok, err)
		}
		if n := e.rawInt("ZCARD", k); n != 1 {
			t.Fatalf("ZCARD %d", n)
		}
		// defer releases.
		func() {
			lease, err := e.c.Acquire(ctx, e.key("deferred"), 1, hour, "x")
			if err != nil || !lease.Allowed {
				t.Fatalf("%v %v", lease, err)
			}
			defer lease.Release(ctx)
			if n := e.rawInt("ZCARD", e.key("deferred")); n != 1 {
				t.Fatalf("ZCARD %d while held", n)
			}
		}()
		if n := e.rawInt("EXISTS", e.key("deferred")); n != 0 {
			t.Fatal("the deferred Release did not give the lease back")
		}
		other, err := e.c.Acquire(ctx, e.key("deferred"), 1, hour, "y")
		if err != nil || !other.Allowed {
			t.Fatalf("after release: %v %v", other, err)
		}
		if ok, err := other.Release(ctx); !ok || err != nil {
			t.Fatalf("%v %v", ok, err)
		}
		// Release by key and id: 1, then 0.
		if ok, err := e.c.Release(ctx, k, "a"); !ok || err != nil {
			t.Fatalf("release a: %v %v", ok, err)
		}
		if ok, err := e.c.Release(ctx, k, "a"); ok || err != nil {
			t.Fatalf("release a again: %v %v", ok, err)
		}
		// Renew: the same id again.
		r, err := e.c.Acquire(ctx, k, 1, time.Minute, "r")
		if err != nil || !r.Allowed {
			t.Fatal(r, err)
		}
		d, err := r.Renew(ctx)
		e.want("renew", d, err, true, 1, 0, zero, within(time.Minute-time.Second, time.Minute))
		_, err = e.c.Acquire(ctx, k, 1, hour, "")
		wantArgumentError(t, "empty id", err, "id must be 1 to 256 bytes")
	})
}

func TestPenalty(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		k := e.key("login")
		m := time.Minute
		d, err := e.c.Penalty(ctx, k, 3, m, m, hour)
		e.want("1st", d, err, true, 3, 2, zero, within(m-time.Second, m))
		d, err = e.c.Penalty(ctx, k, 3, m, m, hour)
		e.want("2nd", d, err, true, 3, 1, zero, within(m-time.Second, m))
		d, err = e.c.Penalty(ctx, k, 3, m, m, hour)
		e.want("3rd blocks", d, err, false, 3, 0, exactly(m), exactly(hour+m))
		d, err = e.c.Penalty(ctx, k, 3, m, m, hour, rl.Cost(0))
		e.want("COST 0 while blocked", d, err, false, 3, 0, within(m-time.Second, m), within(hour+m-time.Second, hour+m))
		_, err = e.c.Penalty(ctx, k, 3, m, 2*hour, hour)
		wantArgumentError(t, "block > max", err, "block must be at most max")
		_, err = e.c.Penalty(ctx, k, 3, m, m, hour, rl.Refund(1))
		wantArgumentError(t, "REFUND", err, "REFUND does not apply to RL.PENALTY, which takes COST")
	})
}

func TestShare(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		k := e.key("budget")
		d, err := e.c.Share(ctx, k, "free", 1, 10, 10, hour)
		if errors.Is(err, rl.ErrUnsupported) {
			t.Skipf("this %s server has no RL.SHARE / rl_share yet (%v)", e.srv.name, err)
		}
		if err != nil || !d.Allowed || d.Limit != 10 || d.Window != hour {
			t.Fatalf("RL.SHARE: %v %v", d, err)
		}
		for _, o := range []rl.Option{rl.Cost(0), rl.Refund(1), rl.Debit(1)} {
			if d, err := e.c.Share(ctx, k, "free", 1, 10, 10, hour, o); err != nil || !d.Allowed {
				t.Fatalf("RL.SHARE %s: %v %v", o.Name(), d, err)
			}
		}
		a, err := e.c.All(ctx, []rl.KeyPolicy{rl.Key(e.key("{s}:b"), rl.Share("pro", 2, 10, 10, hour))})
		if err != nil || !a.Allowed {
			t.Fatalf("SHARE policy: %v %v", a, err)
		}
	})
}

func TestHeadersOfARealDecision(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		k := e.key("h")
		for i := 0; i < 2; i++ {
			if _, err := e.c.GCRA(ctx, k, 2, 1, hour); err != nil {
				t.Fatal(err)
			}
		}
		d, err := e.c.GCRA(ctx, k, 2, 1, hour)
		if err != nil || d.Allowed {
			t.Fatalf("%v %v", d, err)
		}
		want := [][2]string{
			{"RateLimit-Policy", `"default";q=2;w=7200`}, // 2 tokens at 1 an hour
			{"RateLimit", `"default";r=0;t=7200`},
			{"Retry-After", "3600"},
			{"X-RateLimit-Limit", "2"},
			{"X-RateLimit-Remaining", "0"},
			{"X-RateLimit-Reset", "7200"},
		}
		if got := d.HeaderPairs(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("headers %q\nwant %q", got, want)
		}
	})
}

func TestErrors(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		// A bad argument changes nothing.
		k := e.key("bucket")
		if _, err := e.c.Bucket(ctx, k, 10, 1, time.Second, rl.Cost(4)); err != nil {
			t.Fatal(err)
		}
		before := e.rawString("HGET", k, "tokens") + " " + e.rawString("HGET", k, "ts")
		_, err := e.c.Bucket(ctx, k, 10, 0, time.Second)
		wantArgumentError(t, "tokens 0", err, "tokens must be an integer from 1 to 9007199254740991")
		if after := e.rawString("HGET", k, "tokens") + " " + e.rawString("HGET", k, "ts"); after != before {
			t.Fatalf("a bad call changed the key: %q -> %q", before, after)
		}
		_, err = e.c.Fixed(ctx, e.key("new"), 0, time.Minute)
		wantArgumentError(t, "limit 0", err, "limit must be an integer from 1")
		if e.rawInt("EXISTS", e.key("new")) != 0 {
			t.Fatal("a bad call created the key")
		}
		_, err = e.c.Fixed(ctx, e.key("new"), 1, -time.Second)
		wantArgumentError(t, "negative window", err, "window must be from 1ms to 315360000000ms")
		_, err = e.c.Fixed(ctx, k, 1, time.Minute, rl.Cost(1), rl.Refund(1))
		wantArgumentError(t, "COST and REFUND", err, "COST and REFUND exclude each other")
		// A key RL did not write.
		e.raw("SET", e.key("str"), "hello")
		_, err = e.c.Fixed(ctx, e.key("str"), 10, time.Minute)
		wantArgumentError(t, "a foreign string", err, "does not hold an RL.FIXED counter")
		if e.rawString("GET", e.key("str")) != "hello" {
			t.Fatal("overwritten")
		}
		// WRONGTYPE.
		e.raw("RPUSH", e.key("list"), "x")
		_, err = e.c.GCRA(ctx, e.key("list"), 5, 1, time.Second)
		var se *rl.ServerError
		if !errors.Is(err, rl.ErrWrongType) || !errors.As(err, &se) || se.Code != "WRONGTYPE" {
			t.Fatalf("a list key: %T %v", err, err)
		}
		if e.rawInt("LLEN", e.key("list")) != 1 {
			t.Fatal("the list changed")
		}
		var re redis.Error
		if !errors.As(err, &re) {
			t.Fatal("the redigo error is not wrapped")
		}
	})
}

func TestOOM(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		old, err := redis.Strings(e.raw("CONFIG", "GET", "maxmemory"), nil)
		if err != nil || len(old) != 2 {
			t.Fatal(old, err)
		}
		e.raw("CONFIG", "SET", "maxmemory", "1")
		defer e.raw("CONFIG", "SET", "maxmemory", old[1])
		_, err = e.c.GCRA(ctx, e.key("oom"), 5, 1, time.Second)
		if !errors.Is(err, rl.ErrOOM) {
			t.Fatalf("at maxmemory: %T %v, want ErrOOM", err, err)
		}
		// RL.RELEASE still works (no deny-oom): it frees a slot.
		if ok, err := e.c.Release(ctx, e.key("oom"), "id"); ok || err != nil {
			t.Fatalf("RL.RELEASE at maxmemory: %v %v", ok, err)
		}
	})
}

func TestPipeline(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		p := e.c.Pipeline()
		k := e.key("piped")
		var got []*rl.Pending[rl.Decision]
		for i := 0; i < 100; i++ {
			got = append(got, p.GCRA(k, 50, 1, hour))
		}
		bad := p.Fixed(e.key("bad"), 0, time.Second)
		all := p.All([]rl.KeyPolicy{rl.Key(e.key("{a}:1"), rl.Fixed(1, day)), rl.Key(e.key("{a}:2"), rl.Bucket(1, 1, hour))})
		acq := p.Acquire(e.key("lease"), 1, hour, "j")
		rel := p.Release(e.key("lease"), "j")
		thr := p.Throttle(e.key("cell"), 0, 1, time.Second, 1)
		err := p.Exec(ctx)
		var ae *rl.ArgumentError
		if err == nil {
			t.Fatal("Exec hid the bad call's error")
		}
		allowed := 0
		for _, g := range got {
			d, err := g.Result()
			if err != nil {
				t.Fatal(err)
			}
			if d.Allowed {
				allowed++
			}
		}
		if allowed != 50 {
			t.Fatalf("%d of 100 allowed at capacity 50", allowed)
		}
		if _, err := bad.Result(); !errors.As(err, &ae) {
			t.Fatalf("bad: %v", err)
		}
		if d, err := all.Result(); err != nil || !d.Allowed || len(d.Keys) != 2 {
			t.Fatalf("all: %v %v", d, err)
		}
		if d, err := acq.Result(); err != nil || !d.Allowed {
			t.Fatalf("acquire: %v %v", d, err)
		}
		if ok, err := rel.Result(); err != nil || !ok {
			t.Fatalf("release: %v %v", ok, err)
		}
		d, err := thr.Result()
		if e.backend == rl.BackendLibrary {
			if !errors.Is(err, rl.ErrModuleOnly) {
				t.Fatalf("throttle on the library: %v", err)
			}
		} else if err != nil || !d.Allowed {
			t.Fatalf("throttle: %v %v", d, err)
		}
	})
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestNotLoaded starts a bare redis-server: neither module nor library.
func TestNotLoaded(t *testing.T) {
	bin := os.Getenv("REDIS_SERVER")
	if bin == "" {
		bin = "redis-server"
	}
	if _, err := exec.LookPath(bin); err != nil {
		t.Skipf("%s not found: cannot start a server without RL", bin)
	}
	port := freePort(t)
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no")
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	pool := Pool(fmt.Sprintf("redis://127.0.0.1:%d", port))
	defer pool.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn := pool.Get()
		_, err := conn.Do("PING")
		conn.Close()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on %d did not answer: %v (log in %s)", port, err, filepath.Join(dir))
		}
		time.Sleep(20 * time.Millisecond)
	}
	c := Client(pool)
	_, err := c.GCRA(ctx, "k", 5, 1, time.Second)
	if !errors.Is(err, rl.ErrNotLoaded) {
		t.Fatalf("%T %v, want ErrNotLoaded", err, err)
	}
	for _, hint := range []string{"--loadmodule", "FUNCTION LOAD"} {
		if !strings.Contains(err.Error(), hint) {
			t.Errorf("the error does not say %q: %v", hint, err)
		}
	}
	// Even with fail-open: a server without RL is a configuration error.
	if _, err := Client(pool, rl.WithFailOpen()).Fixed(ctx, "k", 1, time.Second); !errors.Is(err, rl.ErrNotLoaded) {
		t.Fatalf("fail-open: %v", err)
	}
	// Forced to the module: the server's "unknown command" is ErrNotLoaded too.
	if _, err := Client(pool, rl.WithBackend(rl.BackendModule)).Fixed(ctx, "k", 1, time.Second); !errors.Is(err, rl.ErrNotLoaded) {
		t.Fatalf("forced module: %v", err)
	}
	if _, err := Client(pool, rl.WithBackend(rl.BackendLibrary)).Fixed(ctx, "k", 1, time.Second); !errors.Is(err, rl.ErrNotLoaded) {
		t.Fatalf("forced library: %v", err)
	}
}

// TestUnreachable: a connection error is returned, or decided by the fail mode.
func TestUnreachable(t *testing.T) {
	url := fmt.Sprintf("redis://127.0.0.1:%d", freePort(t)) // nothing listens there
	pool := Pool(url)
	defer pool.Close()
	_, err := Client(pool).GCRA(ctx, "k", 5, 1, time.Second)
	var ae *rl.ArgumentError
	var se *rl.ServerError
	if err == nil || errors.As(err, &ae) || errors.As(err, &se) || errors.Is(err, rl.ErrNotLoaded) {
		t.Fatalf("default: %T %v, want the connection error", err, err)
	}
	d, err := Client(pool, rl.WithFailOpen()).GCRA(ctx, "k", 5, 1, time.Second)
	if err != nil || !d.Allowed || d.Unavailable == nil || d.Limit != 5 {
		t.Fatalf("fail-open: %v %v", d, err)
	}
	d, err = Client(pool, rl.WithFailClosed()).GCRA(ctx, "k", 5, 1, time.Second)
	if err != nil || d.Allowed || d.Unavailable == nil || d.Headers().Get("Retry-After") != "1" {
		t.Fatalf("fail-closed: %v %v", d, err)
	}
}
