// Package rl is the Go client of RL, native rate-limit commands for Redis and
// Valkey: RL.FIXED, RL.SLIDING, RL.SLIDINGCOUNTER, RL.BUCKET, RL.GCRA (with
// DELAY), CL.THROTTLE, RL.ALL, RL.ACQUIRE/RL.RELEASE, RL.PENALTY and RL.SHARE,
// each one method that returns a typed Decision. The methods, their Pipeline
// twins, the RL.ALL policies, the options and the argument checks are
// generated from RL's command table (commands.json) by `make clients`.
//
// The package has no dependencies: it wraps the Redis client you already use
// through the one-method Doer interface, so it works with go-redis, redigo
// or any other client that can send an arbitrary command. Nothing here
// opens a connection.
//
// With go-redis v9 (github.com/redis/go-redis/v9, made with MaxRetries: -1 so
// that no call is sent twice), one line:
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
//		if dl, ok := ctx.Deadline(); ok {
//			return redis.DoWithTimeout(conn, time.Until(dl), args[0].(string), args[1:]...)
//		}
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
// sends RL.GCRA ... or FCALL rl_gcra 1 ... from then on; Client.Detect asks
// again, WithBackend skips the probe. A call the server answers it does not
// know (restarted without the module, a failover) detects again and is sent
// once more. When neither is there, calls fail with an error matching
// ErrNotLoaded that says how to load one.
//
// # Deadlines and fail modes
//
// Every call returns within its deadline (DefaultTimeout, 100 ms, or
// WithTimeout), whatever the Doer does; nothing is retried inside it. When the
// server cannot be reached in time, the call returns the error, or with
// WithFailOpen an allowed Decision (Remaining = Limit, no retry or reset), with
// WithFailClosed a rejected one (Remaining 0, RetryAfter and ResetAfter 1 s),
// either carrying the error in Unavailable.
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
// A bad argument is an *ArgumentError, refused before anything is sent when
// the command table says it is out of range; a key of another type matches
// ErrWrongType, a server at maxmemory ErrOOM, other server errors are a
// *ServerError. A connection error is returned as is (a missed deadline
// matches context.DeadlineExceeded) unless the client has a fail mode.
package rl
