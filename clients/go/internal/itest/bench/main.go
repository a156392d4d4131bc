// Command bench measures the Go client's overhead: N RL.GCRA calls pipelined
// through the typed API (Client.Pipeline, typed Decisions) against the same
// calls sent raw through the same redigo connection pool, as a redigo user
// writes them by hand (Send each, Flush, Receive each and read its five
// integers with redis.Int64s), in alternating rounds; it prints the median
// of each:
//
//	client-bench go raw_ops=<int> typed_ops=<int> ratio=<typed/raw>
//
// Env: RL_BENCH_URL (redis://127.0.0.1:6379), RL_BENCH_N (20000),
// RL_BENCH_ROUNDS (21). Run it with clients/go/bench.sh.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"strconv"
	"time"

	"github.com/gomodule/redigo/redis"
	rl "github.com/rl-rate/rl/clients/go"
	"github.com/rl-rate/rl/clients/go/internal/itest"
)

const keys = 1000

func envInt(name string, fallback int) int {
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			fail(fmt.Errorf("%s=%q: want a positive integer", name, v))
		}
		return n
	}
	return fallback
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func main() {
	url := os.Getenv("RL_BENCH_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379"
	}
	n, rounds := envInt("RL_BENCH_N", 20000), envInt("RL_BENCH_ROUNDS", 21)
	ctx := context.Background()
	pool := itest.Pool(url)
	defer pool.Close()
	// One Exec is a batch of n calls: give it more than a single call's 100 ms.
	client := itest.Client(pool, rl.WithTimeout(30*time.Second))
	backend, err := client.Backend(ctx)
	if err != nil {
		fail(err)
	}
	names := make([]string, keys)
	for i := range names {
		names[i] = "bench:go:" + strconv.Itoa(i)
	}
	period := time.Second

	// The raw calls: what a redigo user writes by hand, reading each reply's
	// five integers as the typed API does.
	cmd, prefix := "RL.GCRA", []any{}
	if backend == rl.BackendLibrary {
		cmd, prefix = "FCALL", []any{"rl_gcra", int64(1)}
	}
	raw := func() (int, error) {
		conn, err := pool.GetContext(ctx)
		if err != nil {
			return 0, err
		}
		defer conn.Close()
		for i := 0; i < n; i++ {
			args := append(append(make([]any, 0, len(prefix)+4), prefix...), names[i%keys], int64(1000000), int64(1000000), "1000ms")
			if err := conn.Send(cmd, args...); err != nil {
				return 0, err
			}
		}
		if err := conn.Flush(); err != nil {
			return 0, err
		}
		allowed := 0
		for i := 0; i < n; i++ {
			r, err := redis.Int64s(conn.Receive())
			if err != nil {
				return 0, err
			}
			if r[0] == 1 {
				allowed++
			}
		}
		return allowed, nil
	}
	// One pipeline, reused round after round as an application would.
	p := client.Pipeline()
	out := make([]*rl.Pending[rl.Decision], n)
	typed := func() (int, error) {
		for i := range out {
			out[i] = p.GCRA(names[i%keys], 1000000, 1000000, period)
		}
		if err := p.Exec(ctx); err != nil {
			return 0, err
		}
		allowed := 0
		for _, r := range out {
			d, err := r.Result()
			if err != nil {
				return 0, err
			}
			if d.Allowed {
				allowed++
			}
		}
		return allowed, nil
	}
	measure := func(f func() (int, error)) float64 {
		start := time.Now()
		allowed, err := f()
		if err != nil {
			fail(err)
		}
		if allowed == 0 {
			fail(fmt.Errorf("no call was allowed"))
		}
		return float64(n) / time.Since(start).Seconds()
	}
	if path := os.Getenv("RL_BENCH_CPUPROFILE"); path != "" {
		// Only for looking into the typed path's cost.
		f, err := os.Create(path)
		if err != nil {
			fail(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fail(err)
		}
		for i := 0; i < 20; i++ {
			measure(typed)
		}
		pprof.StopCPUProfile()
		f.Close()
	}
	measure(raw) // warm up both: connections, caches
	measure(typed)
	var rawOps, typedOps []float64
	for r := 0; r < rounds; r++ {
		if r%2 == 0 {
			rawOps = append(rawOps, measure(raw))
			typedOps = append(typedOps, measure(typed))
		} else {
			typedOps = append(typedOps, measure(typed))
			rawOps = append(rawOps, measure(raw))
		}
		fmt.Fprintf(os.Stderr, "bench: round %d (%s): raw %.0f ops/s, typed %.0f ops/s\n",
			r+1, backend, rawOps[r], typedOps[r])
	}
	rm, tm := median(rawOps), median(typedOps)
	fmt.Printf("client-bench go raw_ops=%d typed_ops=%d ratio=%.3f\n", int64(rm), int64(tm), tm/rm)
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
