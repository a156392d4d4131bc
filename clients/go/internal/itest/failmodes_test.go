package itest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	rl "github.com/rl-rate/rl/clients/go"
)

// The deadline and the fail modes against servers this file starts, stops,
// kills and pauses, and the re-detection after a restart with the other
// backend.

// margin is how late past its deadline a call may return on a busy machine.
const margin = 150 * time.Millisecond

// own is a redis-server of this test's own.
type own struct {
	t    *testing.T
	port int
	dir  string
	cmd  *exec.Cmd
}

func redisServer(t *testing.T) string {
	bin := os.Getenv("REDIS_SERVER")
	if bin == "" {
		bin = "redis-server"
	}
	if _, err := exec.LookPath(bin); err != nil {
		t.Skipf("%s not found: cannot start a server of the test's own", bin)
	}
	return bin
}

// startOwn starts a server on port (0: a free one) with args, and waits for it.
func startOwn(t *testing.T, port int, args ...string) *own {
	t.Helper()
	if port == 0 {
		port = freePort(t)
	}
	s := &own{t: t, port: port, dir: t.TempDir()}
	s.cmd = exec.Command(redisServer(t), append([]string{"--port", fmt.Sprint(port), "--bind", "127.0.0.1",
		"--dir", s.dir, "--save", "", "--appendonly", "no"}, args...)...)
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.stop)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := s.do("PING"); err == nil {
			return s
		} else if time.Now().After(deadline) {
			t.Fatalf("redis-server on %d did not answer: %v", port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *own) url() string { return fmt.Sprintf("redis://127.0.0.1:%d", s.port) }

func (s *own) do(cmd string, args ...any) (any, error) {
	conn, err := redis.DialURL(s.url(), redis.DialConnectTimeout(time.Second), redis.DialReadTimeout(5*time.Second))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return conn.Do(cmd, args...)
}

func (s *own) stop() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}

// loadLibrary loads functions/rl.lua.
func (s *own) loadLibrary() {
	s.t.Helper()
	code, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "functions", "rl.lua"))
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := s.do("FUNCTION", "LOAD", "REPLACE", code); err != nil {
		s.t.Fatal(err)
	}
}

// dialer is a Doer that dials for every command, so that a restarted server
// is reached at once (no pooled connection to the old one).
func dialer(url string) rl.DoFunc {
	return func(ctx context.Context, args ...any) (any, error) {
		conn, err := redis.DialURL(url, redis.DialConnectTimeout(left(ctx)))
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		return redis.DoWithTimeout(conn, left(ctx), args[0].(string), args[1:]...)
	}
}

// wantOutage checks the three fail modes on a server that cannot answer:
// each call returns by the deadline (plus margin) with the rules' decision.
func wantOutage(t *testing.T, what string, doer rl.Doer, deadline bool) {
	t.Helper()
	const timeout = 100 * time.Millisecond
	modes := []struct {
		name string
		opt  rl.ClientOption
	}{{"raise", nil}, {"allow", rl.WithFailOpen()}, {"deny", rl.WithFailClosed()}}
	for _, m := range modes {
		opts := []rl.ClientOption{rl.WithTimeout(timeout), rl.WithBackend(rl.BackendLibrary)}
		if m.opt != nil {
			opts = append(opts, m.opt)
		}
		c := rl.New(doer, opts...)
		start := time.Now()
		d, err := c.GCRA(ctx, "k", 5, 1, time.Second)
		took := time.Since(start)
		t.Logf("%s, %s: returned in %v (deadline %v)", what, m.name, took.Round(time.Millisecond), timeout)
		if took > timeout+margin {
			t.Errorf("%s, %s: returned in %v, deadline %v", what, m.name, took, timeout)
		}
		var ae *rl.ArgumentError
		var se *rl.ServerError
		switch m.name {
		case "raise":
			if err == nil || errors.As(err, &ae) || errors.As(err, &se) {
				t.Errorf("%s, raise: %T %v, want the connection error", what, err, err)
			}
			if deadline && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s, raise: %v, want the deadline", what, err)
			}
		case "allow":
			want := rl.Decision{Allowed: true, Limit: 5, Remaining: 5, Window: 5 * time.Second}
			if err != nil || d.Unavailable == nil || d.Allowed != want.Allowed || d.Limit != want.Limit ||
				d.Remaining != want.Remaining || d.RetryAfter != 0 || d.ResetAfter != 0 {
				t.Errorf("%s, allow: %v %v", what, d, err)
			}
		case "deny":
			if err != nil || d.Unavailable == nil || d.Allowed || d.Remaining != 0 ||
				d.RetryAfter != time.Second || d.ResetAfter != time.Second {
				t.Errorf("%s, deny: %v %v", what, d, err)
			}
		}
	}
}

func TestOutageStopped(t *testing.T) {
	// Nothing listens on the port: connection refused.
	wantOutage(t, "stopped", dialer(fmt.Sprintf("redis://127.0.0.1:%d", freePort(t))), false)
}

func TestOutageKilled(t *testing.T) {
	s := startOwn(t, 0)
	s.loadLibrary()
	pool := Pool(s.url())
	defer pool.Close()
	c := Client(pool)
	if _, err := c.GCRA(ctx, "k", 5, 1, time.Second); err != nil {
		t.Fatal(err)
	}
	s.stop() // SIGKILL
	wantOutage(t, "killed, pooled connections", Doer(pool), false)
}

func TestOutageHung(t *testing.T) {
	s := startOwn(t, 0)
	s.loadLibrary()
	pool := Pool(s.url())
	defer pool.Close()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }()
	wantOutage(t, "hung (SIGSTOP)", Doer(pool), true)
	// A Doer that ignores its context cannot hold the call either.
	deaf := rl.DoFunc(func(_ context.Context, args ...any) (any, error) {
		conn, err := redis.DialURL(s.url())
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		return conn.Do(args[0].(string), args[1:]...)
	})
	wantOutage(t, "hung, a Doer without deadlines", deaf, true)
}

func TestOutagePaused(t *testing.T) {
	s := startOwn(t, 0)
	s.loadLibrary()
	pool := Pool(s.url())
	defer pool.Close()
	if _, err := s.do("CLIENT", "PAUSE", 5000, "ALL"); err != nil {
		t.Fatal(err)
	}
	wantOutage(t, "CLIENT PAUSE", Doer(pool), true)
	if _, err := s.do("CLIENT", "UNPAUSE"); err != nil {
		t.Fatal(err)
	}
	if _, err := Client(pool).GCRA(ctx, "after", 5, 1, time.Second); err != nil {
		t.Fatalf("after CLIENT UNPAUSE: %v", err)
	}
}

// modulePath is the module the harness's module server loaded (MODULE LIST).
func modulePath(t *testing.T) string {
	u := os.Getenv("RL_TEST_MODULE_URL")
	if u == "" {
		t.Skip("RL_TEST_MODULE_URL not set")
	}
	conn, err := redis.DialURL(u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	mods, err := redis.Values(conn.Do("MODULE", "LIST"))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mods {
		fields, _ := redis.Values(m, nil)
		info := map[string]string{}
		for i := 0; i+1 < len(fields); i += 2 {
			k, _ := redis.String(fields[i], nil)
			v, _ := redis.String(fields[i+1], nil)
			info[k] = v
		}
		if info["name"] == "rl" && info["path"] != "" {
			return info["path"]
		}
	}
	t.Fatalf("no rl module in MODULE LIST: %v", mods)
	return ""
}

// TestRedetectedAfterRestart: the server restarts with only the library (then
// with only the module): the call that finds its command gone detects again
// and is sent once more, and succeeds.
func TestRedetectedAfterRestart(t *testing.T) {
	path := modulePath(t)
	s := startOwn(t, 0, "--loadmodule", path)
	cd := &countingDoer{Doer: dialer(s.url()), words: map[string]int{}}
	c := rl.New(cd)
	if b, err := c.Detect(ctx); err != nil || b != rl.BackendModule {
		t.Fatalf("detect: %v %v", b, err)
	}
	if _, err := c.GCRA(ctx, "k", 5, 1, time.Second); err != nil {
		t.Fatal(err)
	}
	restart := func(args ...string) *own {
		s.stop()
		return startOwn(t, s.port, args...)
	}
	s = restart()
	s.loadLibrary()
	d, err := c.GCRA(ctx, "k", 5, 1, time.Second)
	if err != nil || !d.Allowed || d.Remaining != 4 {
		t.Fatalf("after a restart with only the library: %v %v", d, err)
	}
	if b, _ := c.Backend(ctx); b != rl.BackendLibrary {
		t.Fatalf("backend %v after the restart", b)
	}
	if cd.words["FCALL"] != 1 {
		t.Fatalf("sent %v", cd.words)
	}
	s = restart("--loadmodule", path)
	if d, err := c.GCRA(ctx, "k", 5, 1, time.Second); err != nil || d.Remaining != 4 {
		t.Fatalf("after a restart with only the module: %v %v", d, err)
	}
	// Detect asks every time.
	before := cd.words["COMMAND"]
	for i := 0; i < 2; i++ {
		if b, err := c.Detect(ctx); err != nil || b != rl.BackendModule {
			t.Fatalf("detect: %v %v", b, err)
		}
	}
	if cd.words["COMMAND"] != before+2 {
		t.Fatalf("Detect did not ask the server: %v", cd.words)
	}
	// And a server with neither: ErrNotLoaded, not "unknown command".
	s = restart()
	if _, err := c.GCRA(ctx, "k", 5, 1, time.Second); !errors.Is(err, rl.ErrNotLoaded) {
		t.Fatalf("neither: %v", err)
	}
}
