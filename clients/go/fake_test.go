package rl

import (
	"context"
	"errors"
	"sync"
)

// fake is a Doer that records every command and answers like a server with
// the module, the library, or neither; reply overrides the answer to RL's
// commands.
type fake struct {
	mu      sync.Mutex
	module  bool
	library bool
	down    error // every command fails with this (a connection error)
	reply   func(args []any) (any, error)
	calls   [][]any
	ctxErrs []error // ctx.Err() seen by each command
}

type replyErr string

func (e replyErr) Error() string { return string(e) }

func (f *fake) Do(ctx context.Context, args ...any) (any, error) {
	f.mu.Lock()
	f.calls = append(f.calls, append([]any(nil), args...))
	f.ctxErrs = append(f.ctxErrs, ctx.Err())
	f.mu.Unlock()
	if f.down != nil {
		return nil, f.down
	}
	switch args[0] {
	case "COMMAND":
		if f.module {
			return []any{[]any{"rl.gcra", int64(-5)}}, nil
		}
		return []any{nil}, nil
	case "FUNCTION":
		if f.library {
			return []any{[]any{"library_name", "rl"}}, nil
		}
		return []any{}, nil
	}
	if f.reply != nil {
		return f.reply(args)
	}
	if args[0] == "RL.RELEASE" || (args[0] == "FCALL" && args[1] == "rl_release") {
		return int64(1), nil
	}
	if args[0] == "RL.ALL" || (args[0] == "FCALL" && args[1] == "rl_all") {
		n, _ := toInt64(args[1])
		if args[0] == "FCALL" {
			n, _ = toInt64(args[2])
		}
		out := []any{decisionReply(1, 5, 4, 0, 1000)}
		for i := int64(0); i < n; i++ {
			out = append(out, decisionReply(1, 5, 4, 0, 1000))
		}
		return out, nil
	}
	return decisionReply(1, 5, 4, 0, 1000), nil
}

func decisionReply(n ...int64) []any {
	out := make([]any, len(n))
	for i, v := range n {
		out[i] = v
	}
	return out
}

func (f *fake) last() []any {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) == 0 {
		return nil
	}
	return f.calls[len(f.calls)-1]
}

func (f *fake) count(word string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c[0] == word {
			n++
		}
	}
	return n
}

// fakePipe is a Pipeliner over a fake that answers a batch in one go.
type fakePipe struct {
	*fake
	batches int
}

func (p *fakePipe) DoPipeline(ctx context.Context, cmds [][]any) ([]any, error) {
	p.batches++
	out := make([]any, len(cmds))
	for i, c := range cmds {
		r, err := p.fake.Do(ctx, c...)
		if err != nil {
			var re replyErr
			if !errors.As(err, &re) {
				return nil, err
			}
			out[i] = err
			continue
		}
		out[i] = r
	}
	return out, nil
}
