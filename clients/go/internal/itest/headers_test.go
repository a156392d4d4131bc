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
	if len(h.Calls) < 10 || len(h.Fresh) == 0 || len(h.Failures) == 0 || len(h.Names) == 0 {
		t.Fatalf("headers.json: %d calls, %d fresh, %d failures, %d names", len(h.Calls), len(h.Fresh), len(h.Failures), len(h.Names))
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

// policyOf is an RL.ALL policy of headers.json: ["gcra", 50, 1, 1000].
func policyOf(t *testing.T, raw json.RawMessage) rl.Policy {
	var policy []json.RawMessage
	unmarshal(t, raw, &policy)
	var word string
	unmarshal(t, policy[0], &word)
	n := ints(t, policy[1:])
	switch word {
	case "bucket":
		return rl.Bucket(n[0], n[1], msOf(n[2]))
	case "gcra":
		return rl.GCRA(n[0], n[1], msOf(n[2]))
	case "fixed":
		return rl.Fixed(n[0], msOf(n[1]))
	case "sliding":
		return rl.Sliding(n[0], msOf(n[1]))
	}
	t.Fatalf("policy %q", word)
	return rl.Policy{}
}

// callOf makes a call of headers.json (durations in ms) on key.
func callOf(t *testing.T, c *rl.Client, key string, call []json.RawMessage) (headered, error) {
	t.Helper()
	var name string
	unmarshal(t, call[0], &name)
	args := call[1:]
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
		d, err = c.GCRA(ctx, key, n[0], n[1], msOf(n[2]))
	case "bucket":
		d, err = c.Bucket(ctx, key, n[0], n[1], msOf(n[2]))
	case "throttle":
		d, err = c.Throttle(ctx, key, n[0], n[1], msOf(n[2]), 1)
	case "fixed":
		d, err = c.Fixed(ctx, key, n[0], msOf(n[1]))
	case "sliding":
		d, err = c.Sliding(ctx, key, n[0], msOf(n[1]))
	case "slidingCounter":
		d, err = c.SlidingCounter(ctx, key, n[0], msOf(n[1]))
	case "penalty":
		d, err = c.Penalty(ctx, key, n[0], msOf(n[1]), msOf(n[2]), msOf(n[3]))
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
		wantFields(t, fmt.Sprintf("failure %d (%s)", i, c.Mode), d, c.Fields)
	}
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
