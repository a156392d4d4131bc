package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// The middleware against the harness servers (scripts/clients.sh sets the URLs).
func TestMiddleware(t *testing.T) {
	urls := map[string]string{"module": os.Getenv("RL_TEST_MODULE_URL"), "library": os.Getenv("RL_TEST_LIBRARY_URL")}
	for name, url := range urls {
		url := url
		t.Run(name, func(t *testing.T) {
			if url == "" {
				t.Skip("RL_TEST_MODULE_URL / RL_TEST_LIBRARY_URL not set: run scripts/clients.sh go")
			}
			pool := &redis.Pool{Dial: func() (redis.Conn, error) { return redis.DialURL(url) }, MaxIdle: 4}
			defer pool.Close()
			srv := httptest.NewServer(Handler(NewLimiter(pool), 2, 1, time.Hour, 1, time.Second))
			defer srv.Close()
			who := fmt.Sprintf("example-%s-%d", name, time.Now().UnixNano())
			get := func(path, user string) *http.Response {
				req, _ := http.NewRequest("GET", srv.URL+path, nil)
				req.Header.Set("X-User", user)
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				return res
			}
			for i, want := range []int{200, 200, 429} {
				res := get("/", who)
				if res.StatusCode != want {
					t.Fatalf("request %d: %d, want %d", i+1, res.StatusCode, want)
				}
				// w: the bucket's time to refill from empty (2 tokens at 1 an hour).
				if got := res.Header.Get("RateLimit-Policy"); got != `"default";q=2;w=7200` {
					t.Fatalf("RateLimit-Policy %q", got)
				}
				if want == 429 && res.Header.Get("Retry-After") != "3600" {
					t.Fatalf("Retry-After %q", res.Header.Get("Retry-After"))
				}
				if want == 200 && res.Header.Get("Retry-After") != "" {
					t.Fatal("Retry-After on an allowed request")
				}
			}
			// One report at a time: a second one while the first runs is 503; after it, 200.
			reporter := who + "-r"
			first := make(chan int)
			go func() { first <- get("/report", reporter).StatusCode }()
			conn := pool.Get()
			defer conn.Close()
			deadline := time.Now().Add(5 * time.Second)
			for {
				n, _ := redis.Int(conn.Do("ZCARD", "rl:report:"+reporter))
				if n == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the first report never took its lease")
				}
				time.Sleep(5 * time.Millisecond)
			}
			if code := get("/report", reporter).StatusCode; code != 503 {
				t.Fatalf("a second report at once: %d, want 503", code)
			}
			if code := <-first; code != 200 {
				t.Fatalf("the first report: %d", code)
			}
			if n, _ := redis.Int(conn.Do("EXISTS", "rl:report:"+reporter)); n != 0 {
				t.Fatal("the lease was not released when the report ended")
			}
		})
	}
}
