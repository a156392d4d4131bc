// Package rl is the Go client of RL, native rate-limit commands for Redis and
// Valkey: RL.FIXED, RL.SLIDING, RL.SLIDINGCOUNTER, RL.BUCKET, RL.GCRA (with
// DELAY), CL.THROTTLE, RL.ALL, RL.ACQUIRE/RL.RELEASE, RL.PENALTY and RL.SHARE,
// each one method that returns a typed Decision.
//
// The package has no dependencies: it wraps the Redis client you already use
// through the one-method Doer interface, so it works with go-redis, redigo
// or any other client that can send an arbitrary command. Nothing here
// opens a connection.
//
// With go-redis v9 (github.com/redis/go-redis/v9), one line:
//
//	limiter := rl.New(rl.DoFunc(func(ctx context.Context, args ...any) (any, error) {
//		return rdb.Do(ctx, args...).Result()
//	}))
//
// With redigo (github.com/gomodule/redigo/redis) and a *redis.Pool:
//
//	limiter := rl.New(rl.DoFunc(func(ctx context.Context, args ...any) (any, error) {
//		conn, err := pool.GetContext(ctx)
//		if err != nil {
//			return nil, err
//		}
//		defer conn.Close()
//		return conn.Do(args[0].(string), args[1:]...)
//	}))
//
// Then:
//
//	d, err := limiter.GCRA(ctx, "rl:api:"+user, 20, 100, time.Minute)
//	if err != nil { ... }
//	d.SetHeaders(w.Header())
//	if !d.Allowed { w.WriteHeader(http.StatusTooManyRequests); return }
//
// # Module or library
//
// The first call learns whether the server has the RL module (COMMAND INFO
// rl.gcra) or only the rl Functions library (FUNCTION LIST LIBRARYNAME rl) and
// sends RL.GCRA ... or FCALL rl_gcra 1 ... from then on; WithBackend skips the
// probe. When neither is there, calls fail with an error matching ErrNotLoaded
// that says how to load one.
//
// # Batches
//
// Client.Pipeline queues calls and sends them in one round trip. Give the
// client a Pipeliner (WithPipeliner, or a Doer that also implements it) to
// use your client's own pipelining; without one, the batch is sent one
// command at a time. The go-redis v9 adapter:
//
//	rl.WithPipeliner(rl.PipelineFunc(func(ctx context.Context, cmds [][]any) ([]any, error) {
//		pipe := rdb.Pipeline()
//		res := make([]*redis.Cmd, len(cmds))
//		for i, args := range cmds {
//			res[i] = pipe.Do(ctx, args...)
//		}
//		_, _ = pipe.Exec(ctx) // each command keeps its own error
//		out := make([]any, len(cmds))
//		for i, r := range res {
//			if v, err := r.Result(); err != nil {
//				out[i] = err
//			} else {
//				out[i] = v
//			}
//		}
//		return out, nil
//	}))
//
// # Errors
//
// A bad argument is an *ArgumentError; a key of another type matches
// ErrWrongType, a server at maxmemory ErrOOM, other server errors are a
// *ServerError. A connection error is returned as is unless the client was
// made WithFailOpen or WithFailClosed.
package rl
