// Rate-limited HTTP server: net/http, the RL Go client over redigo, one
// RL.BUCKET call per request (a burst of RL_CAPACITY, then RL_TOKENS per
// RL_PERIOD, per user), and a route (/report) of which at most RL_CONCURRENT
// run at once per user (RL.ACQUIRE, released when the request ends).
//
// Works unchanged with the RL module or, where MODULE LOAD is refused, RL's
// Functions library: the client finds out which one the server has on the
// first call. With go-redis v9 instead of redigo, the Doer is one line:
//
//	rl.DoFunc(func(ctx context.Context, a ...any) (any, error) { return rdb.Do(ctx, a...).Result() })
//
// Run:  go run .      (from a clone; see README.md)
// Env:  REDIS_URL (redis://127.0.0.1:6379), PORT (8090),
//
//	RL_CAPACITY (5), RL_TOKENS (1), RL_PERIOD (1s; RL durations: 1500ms, 60, 1m, ...),
//	RL_CONCURRENT (2) reports at once, each taking RL_REPORT (1s).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/gomodule/redigo/redis"
	rl "github.com/rl-rate/rl/clients/go"
)

// RateLimit is the middleware: one RL.BUCKET call per request, the
// RateLimit and X-RateLimit-* fields on every response, 429 with Retry-After
// when rejected. If Redis cannot be reached the client decides (it is made
// WithFailOpen below: the request goes through, and is logged).
func RateLimit(limiter *rl.Client, capacity, tokens int64, period time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := limiter.Bucket(r.Context(), "rl:api:"+user(r), capacity, tokens, period)
		if err != nil { // RL's own errors: a bad limit, a key of another type, RL not loaded
			log.Printf("rate limiter: %v", err)
			http.Error(w, "rate limiter misconfigured", http.StatusInternalServerError)
			return
		}
		if d.Unavailable != nil {
			log.Printf("rate limiter: redis unavailable, let through: %v", d.Unavailable)
		}
		d.SetHeaders(w.Header())
		if !d.Allowed {
			http.Error(w, "too many requests", http.StatusTooManyRequests)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Concurrent lets at most limit requests per user run the handler at once;
// the lease is released when the handler returns (ttl: the longest one may
// run). The client of a busy service did nothing wrong: 503, not 429.
func Concurrent(limiter *rl.Client, limit int64, ttl time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lease, err := limiter.Acquire(r.Context(), "rl:report:"+user(r), limit, ttl, requestID())
		if err != nil {
			log.Printf("rate limiter: %v", err)
			http.Error(w, "rate limiter misconfigured", http.StatusInternalServerError)
			return
		}
		defer lease.Release(r.Context())
		if !lease.Allowed {
			if lease.Retryable() {
				w.Header().Set("Retry-After", strconv.FormatInt(int64((lease.RetryAfter+time.Second-1)/time.Second), 10))
			}
			http.Error(w, "busy: too many reports at once", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// user is the X-User header, or the client's IP address. In a real
// application use the authenticated user or API key: a client can send any
// X-User it likes.
func user(r *http.Request) string {
	if u := r.Header.Get("X-User"); u != "" {
		return u
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func requestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// NewLimiter is the RL client over a redigo pool.
func NewLimiter(pool *redis.Pool) *rl.Client {
	return rl.New(rl.DoFunc(func(ctx context.Context, args ...any) (any, error) {
		conn, err := pool.GetContext(ctx)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		return conn.Do(args[0].(string), args[1:]...)
	}), rl.WithFailOpen())
}

// Handler is the whole application: / and /report, rate-limited.
func Handler(limiter *rl.Client, capacity, tokens int64, period time.Duration, concurrent int64, report time.Duration) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello, %s\n", user(r))
	})
	mux.Handle("/report", Concurrent(limiter, concurrent, time.Minute, http.HandlerFunc(
		func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(report):
				fmt.Fprintln(w, "report ready")
			case <-r.Context().Done():
			}
		})))
	return RateLimit(limiter, capacity, tokens, period, mux)
}

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func envInt(name string, fallback int64) int64 {
	n, err := strconv.ParseInt(env(name, strconv.FormatInt(fallback, 10)), 10, 64)
	if err != nil {
		log.Fatalf("%s: %v", name, err)
	}
	return n
}

func envDuration(name, fallback string) time.Duration {
	d, err := rl.ParseDuration(env(name, fallback))
	if err != nil {
		log.Fatalf("%s: %v", name, err)
	}
	return d
}

func main() {
	url := env("REDIS_URL", "redis://127.0.0.1:6379")
	pool := &redis.Pool{
		MaxIdle:     16,
		IdleTimeout: time.Minute,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialURL(url, redis.DialConnectTimeout(time.Second),
				redis.DialReadTimeout(time.Second), redis.DialWriteTimeout(time.Second))
		},
	}
	defer pool.Close()
	limiter := NewLimiter(pool)
	if b, err := limiter.Backend(context.Background()); err != nil {
		log.Printf("rate limiter: %v", err)
	} else {
		log.Printf("rate limiter: RL's %s on %s", b, url)
	}
	h := Handler(limiter, envInt("RL_CAPACITY", 5), envInt("RL_TOKENS", 1), envDuration("RL_PERIOD", "1s"),
		envInt("RL_CONCURRENT", 2), envDuration("RL_REPORT", "1s"))
	addr := ":" + env("PORT", "8090")
	log.Printf("listening on %s", addr)
	log.Fatal(http.ListenAndServe(addr, h))
}
