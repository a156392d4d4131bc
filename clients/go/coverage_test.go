package rl

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"testing"
	"time"
)

// The command spec: every command of the repository's commands.json must
// have a method here, every option a parameter, every policy a constructor.

// invokers: one per command, calling its method with the given options.
var invokers = map[string]func(c *Client, opts ...Option) error{
	"RL.FIXED": func(c *Client, o ...Option) error { _, err := c.Fixed(bg, "k", 1, time.Second, o...); return err },
	"RL.SLIDING": func(c *Client, o ...Option) error {
		_, err := c.Sliding(bg, "k", 1, time.Second, o...)
		return err
	},
	"RL.SLIDINGCOUNTER": func(c *Client, o ...Option) error {
		_, err := c.SlidingCounter(bg, "k", 1, time.Second, o...)
		return err
	},
	"RL.BUCKET": func(c *Client, o ...Option) error {
		_, err := c.Bucket(bg, "k", 1, 1, time.Second, o...)
		return err
	},
	"RL.GCRA": func(c *Client, o ...Option) error { _, err := c.GCRA(bg, "k", 1, 1, time.Second, o...); return err },
	"CL.THROTTLE": func(c *Client, o ...Option) error {
		if len(o) > 0 {
			return errors.New("CL.THROTTLE takes no options here")
		}
		_, err := c.Throttle(bg, "k", 0, 1, time.Second, 1)
		return err
	},
	"RL.ALL": func(c *Client, o ...Option) error {
		_, err := c.All(bg, []KeyPolicy{Key("k", Fixed(1, time.Second))}, o...)
		return err
	},
	"RL.ACQUIRE": func(c *Client, o ...Option) error {
		if len(o) > 0 {
			return errors.New("RL.ACQUIRE takes no options here")
		}
		_, err := c.Acquire(bg, "k", 1, time.Second, "id")
		return err
	},
	"RL.RELEASE": func(c *Client, o ...Option) error {
		if len(o) > 0 {
			return errors.New("RL.RELEASE takes no options here")
		}
		_, err := c.Release(bg, "k", "id")
		return err
	},
	"RL.PENALTY": func(c *Client, o ...Option) error {
		_, err := c.Penalty(bg, "k", 1, time.Second, time.Second, time.Second, o...)
		return err
	},
	"RL.SHARE": func(c *Client, o ...Option) error {
		_, err := c.Share(bg, "k", "tenant", 1, 1, 1, time.Second, o...)
		return err
	},
}

// optionValues: one per option word.
var optionValues = map[string]Option{
	"COST": Cost(2), "REFUND": Refund(2), "DEBIT": Debit(2), "DELAY": Delay(2 * time.Second),
}

// policies: one per RL.ALL policy word.
var policies = map[string]Policy{
	"FIXED":          Fixed(1, time.Second),
	"SLIDING":        Sliding(1, time.Second),
	"SLIDINGCOUNTER": SlidingCounter(1, time.Second),
	"BUCKET":         Bucket(1, 1, time.Second),
	"GCRA":           GCRA(1, 1, time.Second),
	"ACQUIRE":        Acquire(1, time.Second, "id"),
	"PENALTY":        Penalty(1, time.Second, time.Second, time.Second),
	"SHARE":          Share("tenant", 1, 1, 1, time.Second),
}

type specArg struct {
	Name     string `json:"name"`
	Optional bool   `json:"optional"`
	Default  any    `json:"default"`
}

type specCommand struct {
	Name      string    `json:"name"`
	Function  *string   `json:"function"`
	Policy    *string   `json:"policy"`
	Keys      string    `json:"keys"`
	Arguments []specArg `json:"arguments"`
	Options   []specArg `json:"options"`
	Reply     string    `json:"reply"`
}

type spec struct {
	Version  string          `json:"version"`
	Library  string          `json:"library"`
	Commands []specCommand   `json:"commands"`
	Policies json.RawMessage `json:"policies"`
}

// loadSpec reads the repository's commands.json (generated from the command
// table by make commands-json).
func loadSpec(t *testing.T) spec {
	path := "../../commands.json"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s spec
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(s.Commands) == 0 {
		t.Fatalf("%s lists no commands", path)
	}
	return s
}

func contains(args []any, v any) bool {
	for _, a := range args {
		if reflect.DeepEqual(a, v) {
			return true
		}
	}
	return false
}

func TestEveryCommandAndOptionOfCommandsJSON(t *testing.T) {
	s := loadSpec(t)
	if s.Library != "" && s.Library != "rl" {
		t.Errorf("library %q, this client calls rl_*", s.Library)
	}
	for _, cmd := range s.Commands {
		cmd := cmd
		t.Run(cmd.Name, func(t *testing.T) {
			invoke, ok := invokers[cmd.Name]
			if !ok {
				t.Fatalf("%s has no method in this client", cmd.Name)
			}
			// The module form: the command's name first.
			f := &fake{module: true}
			if err := invoke(New(f, WithBackend(BackendModule))); err != nil {
				t.Fatalf("%s: %v", cmd.Name, err)
			}
			sent := f.last()
			if sent == nil || sent[0] != cmd.Name {
				t.Fatalf("%s sent %v", cmd.Name, sent)
			}
			if cmd.Keys == "first" && cmd.Arguments != nil {
				required := 0
				for _, a := range cmd.Arguments {
					if !a.Optional && a.Default == nil {
						required++
					}
				}
				if n := len(sent) - 1; n < required || n > len(cmd.Arguments) {
					t.Errorf("%s sent %d arguments (%v); commands.json lists %d", cmd.Name, n, sent, len(cmd.Arguments))
				}
			}
			// The library form: its function, or the typed error when it has none.
			f = &fake{library: true}
			err := invoke(New(f, WithBackend(BackendLibrary)))
			if cmd.Function == nil {
				if !errors.Is(err, ErrModuleOnly) {
					t.Errorf("%s on the library: %v, want ErrModuleOnly", cmd.Name, err)
				}
			} else if err != nil {
				t.Errorf("%s on the library: %v", cmd.Name, err)
			} else if got := f.last(); got[0] != "FCALL" || got[1] != *cmd.Function {
				t.Errorf("%s on the library sent %v, want FCALL %s", cmd.Name, got, *cmd.Function)
			}
			// Every option is a parameter, and reaches the server.
			for _, o := range cmd.Options {
				opt, ok := optionValues[o.Name]
				if !ok {
					t.Errorf("%s: option %s has no parameter in this client", cmd.Name, o.Name)
					continue
				}
				f := &fake{module: true}
				if err := invoke(New(f, WithBackend(BackendModule)), opt); err != nil {
					t.Errorf("%s %s: %v", cmd.Name, o.Name, err)
					continue
				}
				if !contains(f.last(), o.Name) {
					t.Errorf("%s: option %s was not sent: %v", cmd.Name, o.Name, f.last())
				}
			}
			// A command that is an RL.ALL policy has its constructor.
			if cmd.Policy != nil {
				p, ok := policies[*cmd.Policy]
				if !ok {
					t.Fatalf("%s: RL.ALL policy %s has no constructor in this client", cmd.Name, *cmd.Policy)
				}
				if p.Word() != *cmd.Policy {
					t.Errorf("policy %s renders as %s", *cmd.Policy, p.Word())
				}
				f := &fake{module: true}
				if _, err := New(f).All(bg, []KeyPolicy{Key("k", p)}); err != nil {
					t.Fatal(err)
				}
				if !contains(f.last(), *cmd.Policy) {
					t.Errorf("policy %s not sent: %v", *cmd.Policy, f.last())
				}
			}
		})
	}
	checkPolicies(t, s.Policies)
}

// checkPolicies reads the top-level "policies" when it lists them: a list or
// a map of {"word": ..., "options": [...]}.
func checkPolicies(t *testing.T, raw json.RawMessage) {
	if len(raw) == 0 {
		return
	}
	type entry struct {
		Word    string    `json:"word"`
		Options []specArg `json:"options"`
	}
	var list []entry
	if err := json.Unmarshal(raw, &list); err != nil {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			t.Fatalf("policies: %s", raw)
		}
		for word, v := range m {
			var e entry
			if json.Unmarshal(v, &e) != nil {
				continue // a note, not a policy
			}
			if e.Word == "" {
				e.Word = word
			}
			list = append(list, e)
		}
	}
	for _, e := range list {
		if e.Word == "" {
			continue
		}
		if _, ok := policies[e.Word]; !ok {
			t.Errorf("RL.ALL policy %s has no constructor in this client", e.Word)
		}
		for _, o := range e.Options {
			if e.Word != "GCRA" || o.Name != "DELAY" {
				t.Errorf("policy %s option %s: no parameter in this client", e.Word, o.Name)
			}
		}
	}
}
