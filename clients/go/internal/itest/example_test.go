package itest_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/gomodule/redigo/redis"
	rl "github.com/rl-rate/rl/clients/go"
	"github.com/rl-rate/rl/clients/go/internal/itest"
)

// examplePool is a redigo pool on the server with the module.
func examplePool() *redis.Pool {
	url := os.Getenv("RL_TEST_MODULE_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379"
	}
	return &redis.Pool{Dial: func() (redis.Conn, error) { return redis.DialURL(url) }, MaxIdle: 4}
}

// The client over redigo: a Doer (one command on a pooled connection) and a
// Pipeliner (a batch on one connection), as itest.Doer and itest.Pipeliner
// write them (redigo.go), then one call and its headers.
func Example_redigo() {
	pool := examplePool()
	defer pool.Close()

	limiter := rl.New(itest.Doer(pool), rl.WithPipeliner(itest.Pipeliner(pool)))

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
	// Output: true 20 19 "default";q=20;w=12
}

// A new daily limit tried beside the enforced per-second one (the README's
// "Trying a new limit"): the second request would have been rejected by it,
// and is allowed.
func Example_shadow() {
	pool := examplePool()
	defer pool.Close()
	limiter := rl.New(itest.Doer(pool))

	user := fmt.Sprintf("{example:%d}", time.Now().UnixNano())
	for i := 0; i < 2; i++ {
		d, err := limiter.All(context.Background(), []rl.KeyPolicy{
			rl.Key(user+":second", rl.GCRA(10, 10, time.Second)),
			rl.Key(user+":day", rl.Fixed(1, 24*time.Hour, rl.Shadow())),
		})
		if err != nil {
			fmt.Println(err)
			return
		}
		if !d.Keys[1].Allowed {
			fmt.Println("the daily limit would have rejected this request")
		}
		fmt.Println(d.Allowed, d.Headers().Get("RateLimit-Policy"))
	}
	// Output:
	// true "gcra";q=10;w=1
	// the daily limit would have rejected this request
	// true "gcra";q=10;w=1
}
