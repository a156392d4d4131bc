package rl

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"testing"
)

// The generated table (commands_gen.go) against the repository's
// commands.json: every command, argument, option and policy, with the same
// ranges. (`make lint` also fails when the generated files are stale; this
// catches an emitter that drops or misreads something.)

type specField struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Min      *int64   `json:"min"`
	Max      *int64   `json:"max"`
	MinMs    *int64   `json:"min_ms"`
	MaxMs    *int64   `json:"max_ms"`
	MinBytes *int64   `json:"min_bytes"`
	MaxBytes *int64   `json:"max_bytes"`
	Excludes []string `json:"excludes"`
	// An integer bounded per unit (EVERY n): the client checks the largest bound.
	MaxByUnit map[string]int64 `json:"max_by_unit"`
}

type specCommand struct {
	Name      string      `json:"name"`
	Function  *string     `json:"function"`
	Policy    *string     `json:"policy"`
	Arguments []specField `json:"arguments"`
	Options   []specField `json:"options"`
	Reply     string      `json:"reply"`
}

type spec struct {
	Library  string        `json:"library"`
	Commands []specCommand `json:"commands"`
	Policies []struct {
		Word    string      `json:"word"`
		Options []specField `json:"options"`
		Before  []specField `json:"before"` // flags written before the word
	} `json:"policies"`
}

func loadSpec(t *testing.T) spec {
	t.Helper()
	b, err := os.ReadFile("../../commands.json")
	if err != nil {
		t.Fatal(err)
	}
	var s spec
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Commands) == 0 {
		t.Fatal("commands.json lists no commands")
	}
	return s
}

// ruleOf is the rule a field of commands.json should have become.
func ruleOf(f specField) string {
	lo, hi, kind := f.Min, f.Max, kindInteger
	switch f.Type {
	case "duration":
		lo, hi, kind = f.MinMs, f.MaxMs, kindDuration
	case "text":
		lo, hi, kind = f.MinBytes, f.MaxBytes, kindText
	case "word", "anchor", "time", "zone":
		// Sent as non-empty text; the server checks the word, anchor, time or zone.
		one := int64(1)
		lo, hi, kind = &one, nil, kindText
	}
	for _, m := range f.MaxByUnit {
		if hi == nil || m > *hi {
			m := m
			hi = &m
		}
	}
	low, high := int64(math.MinInt64), int64(math.MaxInt64)
	if kind == kindText {
		low = 0
	}
	if lo != nil {
		low = *lo
	}
	if hi != nil {
		high = *hi
	}
	return fmt.Sprint(rule{name: f.Name, kind: kind, min: low, max: high})
}

// flagsLast is fields with its flags (options without a value) after the
// others, as the generated rows list them, and how many flags there are.
func flagsLast(fields []specField) (out []specField, flags int) {
	for _, f := range fields {
		if f.Type != "flag" {
			out = append(out, f)
		}
	}
	for _, f := range fields {
		if f.Type == "flag" {
			out = append(out, f)
			flags++
		}
	}
	return out, flags
}

func optionsOf(t *testing.T, what string, got []optionRule, want []specField, before []specField) {
	t.Helper()
	want, flags := flagsLast(want)
	want = append(want, before...)
	if len(got) != len(want) {
		t.Fatalf("%s: %d options, commands.json has %d", what, len(got), len(want))
	}
	bits := map[string]optionBit{}
	for _, c := range commands {
		for _, o := range append(c.options, c.policyOptions...) {
			bits[o.word] = o.bit
		}
	}
	for i, o := range want {
		g := got[i]
		isFlag, isBefore := o.Type == "flag", i >= len(want)-len(before)
		if isFlag && i < len(want)-len(before)-flags {
			t.Errorf("%s option %d: a flag among the valued options", what, i)
		}
		switch {
		case g.word != o.Name || g.flag != isFlag || g.before != isBefore:
			t.Errorf("%s option %d: %+v, commands.json %+v (before the word: %v)", what, i, g, o, isBefore)
		case isFlag && g.value != (rule{}):
			t.Errorf("%s option %d: the flag %s has a value %+v", what, i, g.word, g.value)
		case !isFlag:
			o.Name = g.value.name // the value's name is the emitter's
			if fmt.Sprint(g.value) != ruleOf(o) {
				t.Errorf("%s option %d: %+v, commands.json %+v", what, i, g, want[i])
			}
		}
		var excludes optionBit
		for _, e := range o.Excludes {
			excludes |= bits[e]
		}
		if g.excludes != excludes {
			t.Errorf("%s: %s excludes %b, commands.json %v", what, g.word, g.excludes, o.Excludes)
		}
	}
}

func TestTheGeneratedTableIsCommandsJSON(t *testing.T) {
	s := loadSpec(t)
	if s.Library != "rl" {
		t.Errorf("library %q, this client calls rl_*", s.Library)
	}
	if len(commands) != len(s.Commands) {
		t.Fatalf("%d commands generated, commands.json has %d", len(commands), len(s.Commands))
	}
	policies := map[string][]specField{}
	before := map[string][]specField{}
	for _, p := range s.Policies {
		policies[p.Word], before[p.Word] = p.Options, p.Before
	}
	for i, want := range s.Commands {
		c := commands[i]
		if c.name != want.Name {
			t.Fatalf("command %d: %s, commands.json %s", i, c.name, want.Name)
		}
		if (want.Function == nil) != (c.fn == "") || (want.Function != nil && *want.Function != c.fn) {
			t.Errorf("%s: function %q", c.name, c.fn)
		}
		if (want.Policy == nil) != (c.word == "") || (want.Policy != nil && *want.Policy != c.word) {
			t.Errorf("%s: policy %q", c.name, c.word)
		}
		var args []specField
		for _, a := range want.Arguments {
			if a.Type != "key" && a.Type != "policy" && a.Name != "numkeys" {
				args = append(args, a)
			} else if a.Name == "numkeys" && (c.numkeys == nil || fmt.Sprint(*c.numkeys) != ruleOf(a)) {
				t.Errorf("%s: numkeys %v", c.name, c.numkeys)
			}
		}
		if len(c.args) != len(args) {
			t.Fatalf("%s: %d arguments, commands.json %d", c.name, len(c.args), len(args))
		}
		for j, a := range args {
			if fmt.Sprint(c.args[j]) != ruleOf(a) {
				t.Errorf("%s argument %d: %+v, commands.json %s", c.name, j, c.args[j], ruleOf(a))
			}
		}
		optionsOf(t, c.name, c.options, want.Options, nil)
		if c.word != "" {
			optionsOf(t, c.name+" policy", c.policyOptions, policies[c.word], before[c.word])
		}
	}
}
