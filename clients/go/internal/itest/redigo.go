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

// Doer sends one command on a connection of pool.
func Doer(pool *redis.Pool) rl.DoFunc {
	return func(ctx context.Context, args ...any) (any, error) {
		conn, err := pool.GetContext(ctx)
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		return conn.Do(args[0].(string), args[1:]...)
	}
}

// Pipeliner sends a batch on one connection of pool: every command, one
// flush, then every reply; a command's error reply goes in its slot.
func Pipeliner(pool *redis.Pool) rl.PipelineFunc {
	return func(ctx context.Context, cmds [][]any) ([]any, error) {
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
			if err != nil {
				if e, ok := err.(redis.Error); ok {
					out[i] = e
					continue
				}
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
}

// Client is an rl.Client over pool, with its pipelining.
func Client(pool *redis.Pool, opts ...rl.ClientOption) *rl.Client {
	return rl.New(Doer(pool), append([]rl.ClientOption{rl.WithPipeliner(Pipeliner(pool))}, opts...)...)
}
