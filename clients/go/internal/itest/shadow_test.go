package itest

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	rl "github.com/rl-rate/rl/clients/go"
)

// Shadow on real servers: counted apart by the module, always sent, never
// cached.

// counter is a counter of INFO rl (the module's): rl_fixed_shadow_rejected.
func (e *env) counter(name string) int {
	e.t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + `:(\d+)`).FindStringSubmatch(e.rawString("INFO", "rl"))
	if m == nil {
		e.t.Fatalf("INFO rl has no %s", name)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func TestShadowCountedApartInInfo(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		if e.backend != rl.BackendModule {
			t.Skip("the library keeps no counters")
		}
		names := []string{"rl_gcra_allowed", "rl_gcra_rejected", "rl_gcra_shadow_allowed", "rl_gcra_shadow_rejected"}
		before := map[string]int{}
		for _, n := range names {
			before[n] = e.counter(n)
		}
		k := e.key("counted")
		for i := 0; i < 3; i++ { // capacity 2: allowed, allowed, rejected
			d, err := e.c.GCRA(ctx, k, 2, 1, time.Minute, rl.Shadow())
			if err != nil || !d.Shadow || d.Allowed != (i < 2) {
				t.Fatalf("shadow call %d: %v %v", i, d, err)
			}
		}
		want := map[string]int{"rl_gcra_allowed": 0, "rl_gcra_rejected": 0, "rl_gcra_shadow_allowed": 2, "rl_gcra_shadow_rejected": 1}
		for _, n := range names {
			if got := e.counter(n) - before[n]; got != want[n] {
				t.Errorf("%s went up by %d, want %d", n, got, want[n])
			}
		}
	})
}

func TestShadowCallsAlwaysReachTheServer(t *testing.T) {
	each(t, func(t *testing.T, e *env) {
		c := Client(e.pool, rl.WithCache(100, time.Minute), rl.WithTimeout(2*time.Second))
		k := e.key("over")
		command := "RL.FIXED"
		if e.backend == rl.BackendLibrary {
			command = "FCALL"
		}
		const n = 50
		before := e.calls(command)
		for i := 0; i < n; i++ {
			d, err := c.Fixed(ctx, k, 1, time.Minute, rl.Shadow())
			if err != nil || !d.Shadow || d.Cached || d.Allowed != (i == 0) {
				t.Fatalf("shadow call %d: %v %v", i, d, err)
			}
		}
		if sent := e.calls(command) - before; sent != n {
			t.Fatalf("%d of %d shadow calls reached the server", sent, n)
		}
		if e.backend == rl.BackendModule && e.counter("rl_fixed_shadow_rejected") < n-1 {
			t.Fatalf("rl_fixed_shadow_rejected %d, want at least %d", e.counter("rl_fixed_shadow_rejected"), n-1)
		}
		// The shadow rejections cached nothing: the enforced call on the same
		// key asks the server, which rejects it (the shadow call took the unit);
		// only then is the key cached.
		before = e.calls(command)
		for i := 0; i < 3; i++ {
			d, err := c.Fixed(ctx, k, 1, time.Minute)
			if err != nil || d.Shadow || d.Allowed || d.Cached != (i > 0) {
				t.Fatalf("enforced call %d: %v %v", i, d, err)
			}
		}
		if sent := e.calls(command) - before; sent != 1 {
			t.Fatalf("%d enforced calls reached the server, want 1", sent)
		}
	})
}
