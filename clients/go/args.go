package rl

import (
	"fmt"
	"strings"
	"time"
)

// The arguments of a call, checked against the command table's rules
// (commands_gen.go) and appended to the command, before anything is sent.

type argKind uint8

const (
	kindInteger argKind = iota
	kindDuration
	kindText
	kindFlag // an option without a value: its word is sent when given
)

// rule is an argument's (or an option value's) kind and range from the table:
// an integer's value, a duration's milliseconds, a text's bytes.
type rule struct {
	name     string
	kind     argKind
	min, max int64
}

// optionBit is one option word (options_gen.go), for the at-most-once and
// excludes checks.
type optionBit uint32

// optionRule is an option a command takes: its value's rule (none for a
// flag) and the options it cannot be given with.
type optionRule struct {
	bit      optionBit
	word     string // "COST"
	value    rule
	flag     bool // a word without a value (SHADOW)
	before   bool // a policy's flag, written before the policy's word in RL.ALL
	excludes optionBit
}

// shadowWord is the flag that makes a call (or an RL.ALL policy) advisory: its
// decision is flagged Shadow, gives no HTTP fields and never uses the
// blocked-key cache or the fallback limiter.
const shadowWord = "SHADOW"

// Option is an option of a call or of a policy: Cost, Refund, Debit, Delay,
// Shadow... (options_gen.go has one constructor per option word of the table).
type Option struct {
	bit  optionBit
	word any // name, boxed once
	name string
	kind argKind
	n    int64
	d    time.Duration
	s    string
}

// Name is the option's word as RL reads it: "COST", "REFUND", "DEBIT", "DELAY", "SHADOW".
func (o Option) Name() string { return o.name }

type replyKind int

const (
	replyDecision replyKind = iota
	replyThrottle
	replyAll
	replyReleased
)

// command is a command of the table (commands_gen.go); its words are boxed
// once here, not on every call.
type command struct {
	name          string // "RL.GCRA"
	fn            string // "rl_gcra"; "" when the library has none
	word          string // its RL.ALL policy word, "" if none
	reply         replyKind
	args          []rule // after the key
	options       []optionRule
	policyOptions []optionRule // the options its policy takes inside RL.ALL
	numkeys       *rule        // RL.ALL's: counted keys
	measure       measure      // which arguments give its limit and window (row.go)
	instead       string       // for ModuleOnlyError: what the library offers instead
	nameV, fnV    any
	wordV         any
	takes         string // the options it takes, for an error: "COST, REFUND"
}

func newCommand(c command) *command {
	c.nameV, c.fnV, c.wordV = c.name, c.fn, c.word
	c.takes = optionWords(c.options)
	return &c
}

func optionWords(rules []optionRule) string {
	words := make([]string, 0, len(rules))
	for _, r := range rules {
		words = append(words, r.word)
	}
	if len(words) == 0 {
		return "no options"
	}
	return strings.Join(words, " or ")
}

// builder appends a call's (or a policy's) checked arguments to *dst, keeping
// the first refusal, and what the fail modes and headers need: the limit,
// the window and whether the call is a shadow one.
type builder struct {
	cmd    *command
	policy bool // building cmd's policy inside RL.ALL
	dst    *[]any
	pre    *[]any // a policy's flags, before its word; nil outside a policy
	shadow bool   // SHADOW given
	box    *boxer // a pipeline's, to box repeated values once
	err    error
	limit  int64
	window time.Duration
}

func (b *builder) refuse(format string, a ...any) {
	if b.err == nil {
		who := b.cmd.name
		if b.policy {
			who = "RL.ALL" // the policy's arguments are RL.ALL's
		}
		b.err = &ArgumentError{Command: who, Message: fmt.Sprintf(format, a...)}
	}
}

// subject is what takes the arguments: the command, or its policy inside RL.ALL.
func (b *builder) subject() string {
	if b.policy {
		return b.cmd.word
	}
	return b.cmd.name
}

// what names r for an error: "limit", or "GCRA capacity" inside RL.ALL.
func (b *builder) what(r *rule) string {
	if b.policy {
		return b.cmd.word + " " + r.name
	}
	return r.name
}

func (b *builder) add(v ...any) { *b.dst = append(*b.dst, v...) }

func (b *builder) int(r *rule, n int64) {
	if n < r.min || n > r.max {
		b.refuse("%s must be an integer from %d to %d, got %d", b.what(r), r.min, r.max, n)
	}
	*b.dst = append(*b.dst, b.box.int(n))
}

func (b *builder) dur(r *rule, d time.Duration) {
	v, msg := b.box.dur(r, d)
	if msg != "" {
		b.refuse("%s %s", b.what(r), msg)
	}
	*b.dst = append(*b.dst, v)
}

func (b *builder) text(r *rule, s string) {
	if int64(len(s)) < r.min || int64(len(s)) > r.max {
		b.refuse("%s must be %d to %d bytes, got %d", b.what(r), r.min, r.max, len(s))
	}
	*b.dst = append(*b.dst, s)
}

// options appends opts, each taken by the command (rules), at most once, and
// none with one it excludes (COST, REFUND and DEBIT exclude one another).
func (b *builder) options(rules []optionRule, opts []Option) {
	var seen, banned optionBit
	for _, o := range opts {
		var r *optionRule
		for i := range rules {
			if rules[i].bit == o.bit {
				r = &rules[i]
				break
			}
		}
		switch {
		case r == nil:
			b.refuse("%s does not apply to %s, which takes %s", o.name, b.subject(), optionWords(rules))
		case seen&o.bit != 0:
			b.refuse("%s given twice", o.name)
		case banned&o.bit != 0 || r.excludes&seen != 0:
			b.refuse("%s and %s exclude each other", optionWords(conflicts(rules, seen, o.bit, r.excludes)), o.name)
		}
		seen |= o.bit
		if r == nil {
			continue
		}
		banned |= r.excludes
		switch {
		case r.before && b.pre != nil:
			*b.pre = append(*b.pre, o.word)
		default:
			*b.dst = append(*b.dst, o.word)
		}
		b.shadow = b.shadow || r.word == shadowWord
		switch o.kind {
		case kindFlag: // its word is all there is
		case kindInteger:
			b.int(&r.value, o.n)
		case kindDuration:
			b.dur(&r.value, o.d)
		default:
			b.text(&r.value, o.s)
		}
	}
}

// conflicts lists the options already seen that o excludes or that exclude o.
func conflicts(rules []optionRule, seen, o, excludes optionBit) []optionRule {
	var out []optionRule
	for _, r := range rules {
		if seen&r.bit != 0 && (excludes&r.bit != 0 || r.excludes&o != 0) {
			out = append(out, r)
		}
	}
	return out
}

// call is one command, built once and rendered for a backend. Its arguments
// are appended to *dst (the call's own buffer, or a pipeline's arena shared
// by all its calls) from start, after three free slots: the module form uses
// the last one or two for the command's name (and RL.ALL's numkeys), the
// library form all three for FCALL, the function and numkeys.
type call struct {
	builder
	start int32
	end   int32    // set by seal
	keys  []Policy // RL.ALL's, for each key's decision
}

// oneCall is a call outside a pipeline, with room for its arguments: one
// allocation.
type oneCall struct {
	call
	own []any
	buf [12]any
}

// one is a call of cmd outside a pipeline.
func one(cmd *command) *call {
	o := &oneCall{}
	o.own = o.buf[:0]
	o.init(cmd, &o.own, nil)
	return &o.call
}

func (k *call) init(cmd *command, dst *[]any, box *boxer) {
	k.cmd, k.dst, k.box = cmd, dst, box
	k.start = int32(len(*dst))
	*dst = append(*dst, nil, nil, nil)
}

// policies appends RL.ALL's keys, then each key's policy.
func (k *call) policies(checks []KeyPolicy) {
	if r := k.cmd.numkeys; r != nil && (int64(len(checks)) < r.min || int64(len(checks)) > r.max) {
		k.refuse("%s takes %d to %d keys, got %d", k.cmd.name, r.min, r.max, len(checks))
	}
	k.keys = make([]Policy, len(checks))
	for i, c := range checks {
		k.add(c.Key)
		k.keys[i] = c.Policy
		if c.Policy.err != nil && k.err == nil {
			k.err = c.Policy.err
		}
		if c.Policy.word == "" {
			k.refuse("key %d (%s) has no policy", i+1, c.Key)
		}
	}
	// The call's own limit and window (for the fail modes) are its first
	// enforced policy's (a shadow one never decides the call), or the first
	// policy's when all are shadow.
	if i := firstEnforced(k.keys); i >= 0 {
		k.window, k.limit = k.keys[i].window, k.keys[i].limit
	} else if len(k.keys) > 0 {
		k.window, k.limit = k.keys[0].window, k.keys[0].limit
	}
	for _, c := range checks {
		k.add(c.Policy.before...)
		k.add(c.Policy.wordV)
		k.add(c.Policy.args...)
	}
}

// firstEnforced is the index of the first policy without Shadow, -1 if all
// have it.
func firstEnforced(policies []Policy) int {
	for i, p := range policies {
		if !p.shadow {
			return i
		}
	}
	return -1
}

// seal ends the call's arguments.
func (k *call) seal() *call {
	k.end = int32(len(*k.dst))
	return k
}

func (k *call) render(b Backend) ([]any, error) {
	if k.err != nil {
		return nil, k.err
	}
	args := (*k.dst)[k.start:k.end:k.end]
	numkeys := 1
	if k.cmd.numkeys != nil {
		numkeys = len(k.keys)
	}
	if b == BackendLibrary {
		if k.cmd.fn == "" {
			return nil, &ModuleOnlyError{Command: k.cmd.name, Instead: k.cmd.instead}
		}
		args[0], args[1], args[2] = fcallV, k.cmd.fnV, k.box.int(int64(numkeys))
		return args, nil
	}
	if k.cmd.numkeys != nil {
		args[1], args[2] = k.cmd.nameV, k.box.int(int64(numkeys))
		return args[1:], nil
	}
	args[2] = k.cmd.nameV
	return args[2:], nil
}

var fcallV any = "FCALL"

// boxer boxes the integers and durations a pipeline repeats (the same limit
// and period on every call) once. A nil boxer boxes every time.
type boxer struct {
	ints [4]struct {
		n int64
		v any
	}
	durs [2]struct {
		d    time.Duration
		r    *rule
		v    any
		fail string
	}
	ni, nd int
}

func (b *boxer) int(n int64) any {
	if b == nil || (n >= 0 && n < 256) { // small ones are never allocated
		return n
	}
	for i := range b.ints {
		if b.ints[i].v != nil && b.ints[i].n == n {
			return b.ints[i].v
		}
	}
	v := any(n)
	b.ints[b.ni].n, b.ints[b.ni].v = n, v
	b.ni = (b.ni + 1) % len(b.ints)
	return v
}

// dur is d as RL reads it, "<n>ms", or why r refuses it.
func (b *boxer) dur(r *rule, d time.Duration) (any, string) {
	if b != nil {
		for i := range b.durs {
			if e := &b.durs[i]; e.v != nil && e.d == d && e.r == r {
				return e.v, e.fail
			}
		}
	}
	s, fail := msArg(r, d)
	v := any(s)
	if b != nil {
		b.durs[b.nd].d, b.durs[b.nd].r, b.durs[b.nd].v, b.durs[b.nd].fail = d, r, v, fail
		b.nd = (b.nd + 1) % len(b.durs)
	}
	return v, fail
}
