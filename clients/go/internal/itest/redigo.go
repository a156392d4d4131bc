// Package itest holds the Go client's adapters for redigo, used by its
// integration tests, its bench and its example.
package itest

import (
	"context"
	"time"

	"github.com/gomodule/redigo/redis"
	rl "github.com/rl-rate/rl/clients/go"
)

// Pool is a redigo pool for a redis:// URL.
func Pool(url string) *redis.Pool {
	return &redis.Pool{
		MaxIdle:     8,
		IdleTimeout: time.Minute,
		DialContext: func(ctx context.Context) (redis.Conn, error) {
			return redis.DialURL(url, redis.DialConnectTimeout(2*time.Second),
				redis.DialReadTimeout(10*time.Second), redis.DialWriteTimeout(10*time.Second))
		},
	}
}

// left is the time to ctx's deadline (0: none; redigo's own read timeout
// then applies), at least a microsecond when there is one.
func left(ctx context.Context) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0
	}
	if d := time.Until(dl); d > time.Microsecond {
		return d
	}
	return time.Microsecond
}

// Doer sends one command on a connection of pool, reading its reply by ctx's
// deadline: a connection that timed out is closed, not reused.
func Doer(pool *redis.Pool) rl.DoFunc {
	return func(ctx context.Context, args ...any) (any, error) {
		conn, err := pool.GetContext(ctx)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		if d := left(ctx); d > 0 {
			return redis.DoWithTimeout(conn, d, args[0].(string), args[1:]...)
		}
		return conn.Do(args[0].(string), args[1:]...)
	}
}

// Pipeliner sends a batch on one connection of pool: every command, then one
// flush and every reply under one read deadline (redigo's Do with no command
// does both); a command's error reply is a redis.Error in its slot.
func Pipeliner(pool *redis.Pool) rl.PipelineFunc {
	return func(ctx context.Context, cmds [][]any) ([]any, error) {
		if len(cmds) == 0 {
			return []any{}, nil
		}
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
		// The client returns at the deadline anyway: the read stops there too.
		return redis.Values(redis.DoWithTimeout(conn, left(ctx), ""))
	}
}

// Client is an rl.Client over pool, with its pipelining.
func Client(pool *redis.Pool, opts ...rl.ClientOption) *rl.Client {
	return rl.New(Doer(pool), append([]rl.ClientOption{rl.WithPipeliner(Pipeliner(pool))}, opts...)...)
}
