package rl

import "time"

// What every command's call has in common, written once: its arguments are checked
// against the table in order (commands_gen.go passes them as values), then the limit
// and the window the fail modes and the RateLimit-Policy field need follow from the
// command's measure.

// value is one argument as a method takes it: an integer, a duration or a text.
type value struct {
	n int64
	d time.Duration
	s string
}

func integerArg(n int64) value          { return value{n: n} }
func durationArg(d time.Duration) value { return value{d: d} }
func textArg(s string) value            { return value{s: s} }

// windowKind is how a command's limit and window follow from its arguments.
type windowKind uint8

const (
	windowNone     windowKind = iota // no window the client can compute
	windowArgument                   // a duration argument is the window
	windowRefill                     // a bucket: capacity, tokens, period
	windowThrottle                   // CL.THROTTLE: max_burst + 1, count, period
)

// measure says which arguments (by index) give a command's limit and window; limit
// is -1 when none does.
type measure struct {
	kind    windowKind
	limit   int
	a, b, c int
}

// args appends the arguments after the key, checked against the table, and sets
// the limit and the window.
func (b *builder) args(vs ...value) {
	r := b.cmd.args
	for i := range vs {
		switch r[i].kind {
		case kindInteger:
			b.int(&r[i], vs[i].n)
		case kindDuration:
			b.dur(&r[i], vs[i].d)
		default:
			b.text(&r[i], vs[i].s)
		}
	}
	m := b.cmd.measure
	if m.limit >= 0 {
		b.limit = vs[m.limit].n
	}
	switch m.kind {
	case windowArgument:
		b.window = vs[m.a].d
	case windowRefill:
		b.window = refillWindow(vs[m.a].n, vs[m.b].n, vs[m.c].d)
	case windowThrottle:
		b.limit = vs[m.a].n + 1
		b.window = refillWindow(vs[m.a].n+1, vs[m.b].n, vs[m.c].d)
	}
}

// with builds a call on one key: the key, the arguments, the options (a flag
// among them, after the arguments).
func (k *call) with(key string, opts []Option, vs ...value) *call {
	k.add(key)
	k.args(vs...)
	k.options(k.cmd.options, opts)
	return k
}

// An option's value with its word, boxed once (options_gen.go's constructors, one
// per kind of value).
func optionOf(bit optionBit, word any, kind argKind, v value) Option {
	name, _ := word.(string)
	return Option{bit: bit, word: word, name: name, kind: kind, n: v.n, d: v.d, s: v.s}
}

func integerOption(bit optionBit, word any, n int64) Option {
	return optionOf(bit, word, kindInteger, integerArg(n))
}

func durationOption(bit optionBit, word any, d time.Duration) Option {
	return optionOf(bit, word, kindDuration, durationArg(d))
}

func textOption(bit optionBit, word any, s string) Option {
	return optionOf(bit, word, kindText, textArg(s))
}

func flagOption(bit optionBit, word any) Option {
	return optionOf(bit, word, kindFlag, value{})
}
