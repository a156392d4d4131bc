package itest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	rl "github.com/rl-rate/rl/clients/go"
)

// headerCase is one call of clients/headers.json: its name and arguments
// (durations in ms), and the RateLimit-Policy every typed client gives for it.
type headerCase struct {
	Call       []json.RawMessage `json:"call"`
	ModuleOnly bool              `json:"module_only"`
	Policy     string            `json:"policy"`
}

func ints(t *testing.T, raw []json.RawMessage) []int64 {
	t.Helper()
	out := make([]int64, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			t.Fatalf("argument %s: %v", r, err)
		}
	}
	return out
}

func msOf(n int64) time.Duration { return time.Duration(n) * time.Millisecond }

// TestHeadersVector: the same calls give the same RateLimit-Policy in every client.
func TestHeadersVector(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "headers.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Calls []headerCase `json:"calls"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	if len(file.Calls) < 10 {
		t.Fatalf("%d calls in headers.json", len(file.Calls))
	}
	each(t, func(t *testing.T, e *env) {
		for i, c := range file.Calls {
			if c.ModuleOnly && e.backend != rl.BackendModule {
				continue
			}
			var name string
			if err := json.Unmarshal(c.Call[0], &name); err != nil {
				t.Fatal(err)
			}
			key := e.key(fmt.Sprintf("vector-%d", i))
			args := c.Call[1:]
			var d rl.Decision
			var err error
			switch name {
			case "gcra", "bucket", "throttle":
				n := ints(t, args)
				switch name {
				case "gcra":
					d, err = e.c.GCRA(ctx, key, n[0], n[1], msOf(n[2]))
				case "bucket":
					d, err = e.c.Bucket(ctx, key, n[0], n[1], msOf(n[2]))
				default:
					d, err = e.c.Throttle(ctx, key, n[0], n[1], msOf(n[2]), 1)
				}
			case "fixed", "sliding", "slidingCounter":
				n := ints(t, args)
				call := map[string]func() (rl.Decision, error){
					"fixed":          func() (rl.Decision, error) { return e.c.Fixed(ctx, key, n[0], msOf(n[1])) },
					"sliding":        func() (rl.Decision, error) { return e.c.Sliding(ctx, key, n[0], msOf(n[1])) },
					"slidingCounter": func() (rl.Decision, error) { return e.c.SlidingCounter(ctx, key, n[0], msOf(n[1])) },
				}[name]
				d, err = call()
			case "penalty":
				n := ints(t, args)
				d, err = e.c.Penalty(ctx, key, n[0], msOf(n[1]), msOf(n[2]), msOf(n[3]))
			case "acquire":
				n := ints(t, args[:2])
				var id string
				if err := json.Unmarshal(args[2], &id); err != nil {
					t.Fatal(err)
				}
				var lease *rl.Lease
				if lease, err = e.c.Acquire(ctx, key, n[0], msOf(n[1]), id); err == nil {
					d = lease.Decision
				}
			case "all":
				var checks []rl.KeyPolicy
				for j, raw := range args {
					var policy []json.RawMessage
					if err := json.Unmarshal(raw, &policy); err != nil {
						t.Fatal(err)
					}
					var word string
					if err := json.Unmarshal(policy[0], &word); err != nil {
						t.Fatal(err)
					}
					n := ints(t, policy[1:])
					var p rl.Policy
					switch word {
					case "bucket":
						p = rl.Bucket(n[0], n[1], msOf(n[2]))
					case "gcra":
						p = rl.GCRA(n[0], n[1], msOf(n[2]))
					case "fixed":
						p = rl.Fixed(n[0], msOf(n[1]))
					default:
						t.Fatalf("policy %q", word)
					}
					checks = append(checks, rl.Key(fmt.Sprintf("{%s}:%d", key, j), p))
				}
				var a rl.AllDecision
				a, err = e.c.All(ctx, checks)
				d = a.Decision
			default:
				t.Fatalf("call %q", name)
			}
			if err != nil {
				t.Fatalf("%s: %v", c.Call, err)
			}
			if got := d.Headers().Get("RateLimit-Policy"); got != c.Policy {
				t.Fatalf("call %d %q: RateLimit-Policy %s, want %s", i, name, got, c.Policy)
			}
		}
	})
}
