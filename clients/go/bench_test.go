package rl

import (
	"context"
	"testing"
	"time"
)

// The client's own cost per pipelined call, without a server: building the
// command, rendering it, reading the reply.
func BenchmarkPipelineGCRA(b *testing.B) {
	reply := decisionReply(1, 5, 4, 0, 1000)
	pipe := PipelineFunc(func(ctx context.Context, cmds [][]any) ([]any, error) {
		out := make([]any, len(cmds))
		for i := range out {
			out[i] = reply
		}
		return out, nil
	})
	c := New(&fake{module: true}, WithPipeliner(pipe), WithBackend(BackendModule))
	const batch = 1000
	out := make([]*Pending[Decision], batch)
	b.ReportAllocs()
	b.ResetTimer()
	p := c.Pipeline()
	for i := 0; i < b.N; i += batch {
		for j := range out {
			out[j] = p.GCRA("bench:key", 1000000, 1000000, time.Second)
		}
		if err := p.Exec(bg); err != nil {
			b.Fatal(err)
		}
		for _, r := range out {
			if d, err := r.Result(); err != nil || !d.Allowed {
				b.Fatal(d, err)
			}
		}
	}
}
