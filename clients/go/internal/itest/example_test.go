package itest_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/gomodule/redigo/redis"
	rl "github.com/rl-rate/rl/clients/go"
)

// The client over redigo: a Doer (one command on a pooled connection) and a
// Pipeliner (a batch on one connection), then one call and its headers.
func Example_redigo() {
	url := os.Getenv("RL_TEST_MODULE_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379"
	}
	pool := &redis.Pool{Dial: func() (redis.Conn, error) { return redis.DialURL(url) }, MaxIdle: 4}
	defer pool.Close()

	limiter := rl.New(
		rl.DoFunc(func(ctx context.Context, args ...any) (any, error) {
			conn, err := pool.GetContext(ctx)
			if err != nil {
				return nil, err
			}
			defer conn.Close()
			return conn.Do(args[0].(string), args[1:]...)
		}),
		rl.WithPipeliner(rl.PipelineFunc(func(ctx context.Context, cmds [][]any) ([]any, error) {
			conn, err := pool.GetContext(ctx)
			if err != nil {
				return nil, err
			}
			defer conn.Close()
			for _, c := range cmds {
				if err := conn.Send(c[0].(string), c[1:]...); err != nil {
					return nil, err
				}
			}
			if err := conn.Flush(); err != nil {
				return nil, err
			}
			out := make([]any, len(cmds))
			for i := range cmds {
				r, err := conn.Receive()
				if e, ok := err.(redis.Error); ok {
					r = e // this command's error reply, in its slot
				} else if err != nil {
					return nil, err
				}
				out[i] = r
			}
			return out, nil
		})),
	)

	ctx := context.Background()
	key := fmt.Sprintf("example:%d", time.Now().UnixNano())
	d, err := limiter.GCRA(ctx, key, 20, 100, time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	h := http.Header{}
	d.SetHeaders(h)
	fmt.Println(d.Allowed, d.Limit, d.Remaining, h.Get("RateLimit-Policy"))
	// Output: true 20 19 "default";q=20;w=60
}
