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

// The client over redigo: a Doer (one command on a pooled connection) and a
// Pipeliner (a batch on one connection), as itest.Doer and itest.Pipeliner
// write them (redigo.go), then one call and its headers.
func Example_redigo() {
	url := os.Getenv("RL_TEST_MODULE_URL")
	if url == "" {
		url = "redis://127.0.0.1:6379"
	}
	pool := &redis.Pool{Dial: func() (redis.Conn, error) { return redis.DialURL(url) }, MaxIdle: 4}
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
