package itest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	rl "github.com/rl-rate/rl/clients/go"
)

// clients/headers.json: the HTTP fields every typed client gives.
type headerCases struct {
	Calls []struct {
		Call       []json.RawMessage `json:"call"`
		ModuleOnly bool              `json:"module_only"`
		Policy     string            `json:"policy"`
	} `json:"calls"`
	Fresh []struct {
		Call   []json.RawMessage `json:"call"`
		Fields map[string]string `json:"fields"`
	} `json:"fresh"`
	Failures []struct {
		Call   []json.RawMessage `json:"call"`
		Mode   string            `json:"mode"`
		Fields map[string]string `json:"fields"`
	} `json:"failures"`
	Names []struct {
		Call   []json.RawMessage `json:"call"`
		Name   string            `json:"name"`
		Policy string            `json:"policy"`
		Error  bool              `json:"error"`
	} `json:"names"`
	Shadow []struct {
		Call    []json.RawMessage `json:"call"`
		Calls   int               `json:"calls"`
		Allowed bool              `json:"allowed"`
		Members []struct {
			Allowed bool `json:"allowed"`
			Shadow  bool `json:"shadow"`
		} `json:"members"`
		Fields map[string]string `json:"fields"`
	} `json:"shadow"`
}

func loadHeaderCases(t *testing.T) headerCases {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "headers.json"))
	if err != nil {
		t.Fatal(err)
	}
	var h headerCases
	if err := json.Unmarshal(data, &h); err != nil {
		t.Fatal(err)
	}
	if len(h.Calls) < 10 || len(h.Fresh) == 0 || len(h.Failures) == 0 || len(h.Names) == 0 || len(h.Shadow) == 0 {
		t.Fatalf("headers.json: %d calls, %d fresh, %d failures, %d names, %d shadow",
			len(h.Calls), len(h.Fresh), len(h.Failures), len(h.Names), len(h.Shadow))
	}
	return h
}

// headered is a Decision or an AllDecision.
type headered interface {
	Headers() http.Header
	HeaderPairs() [][2]string
}

func unmarshal(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
}

func ints(t *testing.T, raw []json.RawMessage) []int64 {
	t.Helper()
	out := make([]int64, len(raw))
	for i, r := range raw {
		unmarshal(t, r, &out[i])
	}
	return out
}

func msOf(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// shadowed splits a call (or policy) of headers.json into its name, its
// arguments and its options: Shadow when the list starts with "shadow".
func shadowed(t *testing.T, call []json.RawMessage) (string, []json.RawMessage, []rl.Option) {
	t.Helper()
	var name string
	unmarshal(t, call[0], &name)
	if name != "shadow" {
		return name, call[1:], nil
	}
	unmarshal(t, call[1], &name)
	return name, call[2:], []rl.Option{rl.Shadow()}
}

// isShadow says whether a call (or policy) of headers.json has the flag.
func isShadow(t *testing.T, call []json.RawMessage) bool {
	_, _, opts := shadowed(t, call)
	return len(opts) > 0
}

// policyOf is an RL.ALL policy of headers.json: ["gcra", 50, 1, 1000], or
// ["shadow", "gcra", 50, 1, 1000].
func policyOf(t *testing.T, raw json.RawMessage) rl.Policy {
	var policy []json.RawMessage
	unmarshal(t, raw, &policy)
	word, args, opts := shadowed(t, policy)
	n := ints(t, args)
	switch word {
	case "bucket":
		return rl.Bucket(n[0], n[1], msOf(n[2]), opts...)
	case "gcra":
		return rl.GCRA(n[0], n[1], msOf(n[2]), opts...)
	case "fixed":
		return rl.Fixed(n[0], msOf(n[1]), opts...)
	case "sliding":
		return rl.Sliding(n[0], msOf(n[1]), opts...)
	}
	t.Fatalf("policy %q", word)
	return rl.Policy{}
}

// callOf makes a call of headers.json (durations in ms) on key.
func callOf(t *testing.T, c *rl.Client, key string, call []json.RawMessage) (headered, error) {
	t.Helper()
	name, args, opts := shadowed(t, call)
	if name == "all" {
		var checks []rl.KeyPolicy
		for j, raw := range args {
			checks = append(checks, rl.Key(fmt.Sprintf("{%s}:%d", key, j), policyOf(t, raw)))
		}
		return c.All(ctx, checks)
	}
	if name == "acquire" {
		n := ints(t, args[:2])
		var id string
		unmarshal(t, args[2], &id)
		lease, err := c.Acquire(ctx, key, n[0], msOf(n[1]), id)
		if err != nil {
			return nil, err
		}
		return lease.Decision, nil
	}
	n := ints(t, args)
	var d rl.Decision
	var err error
	switch name {
	case "gcra":
		d, err = c.GCRA(ctx, key, n[0], n[1], msOf(n[2]), opts...)
	case "bucket":
		d, err = c.Bucket(ctx, key, n[0], n[1], msOf(n[2]), opts...)
	case "throttle":
		d, err = c.Throttle(ctx, key, n[0], n[1], msOf(n[2]), 1)
	case "fixed":
		d, err = c.Fixed(ctx, key, n[0], msOf(n[1]), opts...)
	case "sliding":
		d, err = c.Sliding(ctx, key, n[0], msOf(n[1]), opts...)
	case "slidingCounter":
		d, err = c.SlidingCounter(ctx, key, n[0], msOf(n[1]), opts...)
	case "penalty":
		d, err = c.Penalty(ctx, key, n[0], msOf(n[1]), msOf(n[2]), msOf(n[3]), opts...)
	default:
		t.Fatalf("call %q", name)
	}
	return d, err
}

var dumpMu sync.Mutex

// dump appends every field to $RL_TEST_HEADER_DUMP, for test.sh to check with
// a structured-field parser.
func dump(t *testing.T, pairs [][2]string) {
	path := os.Getenv("RL_TEST_HEADER_DUMP")
	if path == "" {
		return
	}
	dumpMu.Lock()
	defer dumpMu.Unlock()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, kv := range pairs {
		fmt.Fprintf(f, "%s\t%s\n", kv[0], kv[1])
	}
}

func wantFields(t *testing.T, what string, h headered, fields map[string]string) {
	t.Helper()
	dump(t, h.HeaderPairs())
	got := h.Headers()
	for name, want := range fields {
		if g := got.Get(name); g != want {
			t.Errorf("%s: %s: %s, want %s", what, name, g, want)
		}
	}
	if _, ok := fields["Retry-After"]; !ok && got.Get("Retry-After") != "" {
		t.Errorf("%s: Retry-After %s, want none", what, got.Get("Retry-After"))
	}
}

// TestHeadersCallsAndFresh: calls (their RateLimit-Policy) and fresh (every
// field after the first call on a new key).
func TestHeadersCallsAndFresh(t *testing.T) {
	h := loadHeaderCases(t)
	type fieldCase struct {
		call       []json.RawMessage
		moduleOnly bool
		fields     map[string]string
	}
	var cases []fieldCase
	for _, c := range h.Calls {
		cases = append(cases, fieldCase{c.Call, c.ModuleOnly, map[string]string{"RateLimit-Policy": c.Policy}})
	}
	for _, c := range h.Fresh {
		cases = append(cases, fieldCase{c.Call, false, c.Fields})
	}
	each(t, func(t *testing.T, e *env) {
		for i, c := range cases {
			if c.moduleOnly && e.backend != rl.BackendModule {
				continue
			}
			d, err := callOf(t, e.c, e.key(fmt.Sprintf("case-%d", i)), c.call)
			if err != nil {
				t.Fatalf("%s: %v", c.call, err)
			}
			wantFields(t, fmt.Sprintf("case %d", i), d, c.fields)
		}
	})
}

// rateLimitFields are the fields headers.json lists (the client adds the
// X-RateLimit ones beside them).
var rateLimitFields = []string{"RateLimit-Policy", "RateLimit", "Retry-After"}

// wantExactFields checks h gives exactly fields: each listed one as listed,
// none of the others, and no field at all for {}.
func wantExactFields(t *testing.T, what string, h headered, fields map[string]string) {
	t.Helper()
	wantFields(t, what, h, fields)
	if len(fields) == 0 && len(h.HeaderPairs()) != 0 {
		t.Errorf("%s: fields %v, want none", what, h.HeaderPairs())
	}
	for _, name := range rateLimitFields {
		if _, ok := fields[name]; !ok && h.Headers().Get(name) != "" {
			t.Errorf("%s: %s %s, want none", what, name, h.Headers().Get(name))
		}
	}
}

// wantShadowFlags checks the Shadow flag of a call's decision (and of each
// RL.ALL member's) against the call of headers.json.
func wantShadowFlags(t *testing.T, what string, call []json.RawMessage, h headered) {
	t.Helper()
	name, args, _ := shadowed(t, call)
	switch d := h.(type) {
	case rl.Decision:
		if d.Shadow != isShadow(t, call) {
			t.Errorf("%s: Shadow %v", what, d.Shadow)
		}
	case rl.AllDecision:
		if name != "all" || d.Shadow || len(d.Keys) != len(args) {
			t.Fatalf("%s: combined Shadow %v, %d keys", what, d.Shadow, len(d.Keys))
		}
		for j, raw := range args {
			var policy []json.RawMessage
			unmarshal(t, raw, &policy)
			if d.Keys[j].Shadow != isShadow(t, policy) {
				t.Errorf("%s: key %d Shadow %v", what, j, d.Keys[j].Shadow)
			}
		}
	}
}

func TestHeadersFailures(t *testing.T) {
	h := loadHeaderCases(t)
	pool := Pool(fmt.Sprintf("redis://127.0.0.1:%d", freePort(t))) // nothing listens there
	defer pool.Close()
	for i, c := range h.Failures {
		mode := map[string]rl.ClientOption{"allow": rl.WithFailOpen(), "deny": rl.WithFailClosed()}[c.Mode]
		if mode == nil {
			t.Fatalf("mode %q", c.Mode)
		}
		d, err := callOf(t, Client(pool, mode), "k", c.Call)
		if err != nil {
			t.Fatalf("%s %s: %v", c.Mode, c.Call, err)
		}
		what := fmt.Sprintf("failure %d (%s)", i, c.Mode)
		wantExactFields(t, what, d, c.Fields)
		wantShadowFlags(t, what, c.Call, d)
	}
}

// TestHeadersShadow: each call of the shadow section made `calls` times on
// the same keys; the last decision's allowed, shadow flags and fields.
func TestHeadersShadow(t *testing.T) {
	h := loadHeaderCases(t)
	each(t, func(t *testing.T, e *env) {
		for i, c := range h.Shadow {
			call, _ := json.Marshal(c.Call)
			what := fmt.Sprintf("shadow %d %s", i, call)
			var d headered
			var err error
			for n := 0; n < c.Calls; n++ {
				if d, err = callOf(t, e.c, e.key(fmt.Sprintf("shadow-%d", i)), c.Call); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
			}
			wantExactFields(t, what, d, c.Fields)
			wantShadowFlags(t, what, c.Call, d)
			switch d := d.(type) {
			case rl.Decision:
				if d.Allowed != c.Allowed || len(c.Members) != 0 {
					t.Errorf("%s: allowed %v, want %v", what, d.Allowed, c.Allowed)
				}
			case rl.AllDecision:
				if d.Allowed != c.Allowed || len(d.Keys) != len(c.Members) {
					t.Fatalf("%s: allowed %v, %d keys; want %v, %d", what, d.Allowed, len(d.Keys), c.Allowed, len(c.Members))
				}
				for j, m := range c.Members {
					if d.Keys[j].Allowed != m.Allowed || d.Keys[j].Shadow != m.Shadow {
						t.Errorf("%s: key %d allowed %v shadow %v, want %+v", what, j, d.Keys[j].Allowed, d.Keys[j].Shadow, m)
					}
				}
			}
		}
	})
}

func TestHeadersNames(t *testing.T) {
	h := loadHeaderCases(t)
	each(t, func(t *testing.T, e *env) {
		for i, c := range h.Names {
			d, err := callOf(t, e.c, e.key(fmt.Sprintf("names-%d", i)), c.Call)
			if err != nil {
				t.Fatalf("%s: %v", c.Call, err)
			}
			named, err := d.(rl.Decision).Named(c.Name)
			var ae *rl.ArgumentError
			if c.Error {
				if !errors.As(err, &ae) {
					t.Errorf("name %q: %v, want an *rl.ArgumentError", c.Name, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("name %q: %v", c.Name, err)
			}
			wantFields(t, fmt.Sprintf("name %q", c.Name), named, map[string]string{"RateLimit-Policy": c.Policy})
		}
	})
}
