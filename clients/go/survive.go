package rl

import (
	"container/list"
	"context"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"
)

// Staying up when Redis is slow or gone (both off unless configured): a cache
// of blocked keys, which rejects locally a call the server has just rejected
// until its RetryAfter, and a fallback limiter, an in-process GCRA at the
// call's limit / instances that decides while the server cannot be reached.

// WithCache remembers up to size blocked keys (size <= 0: no cache). After a
// rejection, the same Fixed, Sliding, Bucket, GCRA or SlidingCounter call
// (same key and arguments) at the same or a larger cost is rejected locally,
// with Cached set and what is left of the server's RetryAfter, until
// min(RetryAfter, max) has passed (max <= 0: one second). Cost 0, Refund and
// Debit go to the server and end the entry. Calls with Shadow neither use nor
// fill it (nor the fallback limiter): they always go to the server.
func WithCache(size int, max time.Duration) ClientOption {
	return func(c *Client) {
		if max <= 0 {
			max = time.Second
		}
		c.survival().cacheSize, c.survival().cacheMax = size, max
	}
}

// WithFallback decides the same calls locally while Redis cannot be reached
// (a connection error or the deadline): an in-process GCRA at the call's
// limit / instances (instances: how many app instances share the limits;
// <= 0: no fallback) per window, per key and arguments, with Unavailable set
// to the error. It replaces WithFailOpen / WithFailClosed for those calls.
// The server is tried again at most every probeEvery (<= 0: 500 ms).
func WithFallback(instances int, probeEvery time.Duration) ClientOption {
	return func(c *Client) {
		if probeEvery <= 0 {
			probeEvery = 500 * time.Millisecond
		}
		c.survival().instances, c.survival().probeEvery = instances, probeEvery
	}
}

// survival is the client's cache and fallback state, made by the first option.
func (c *Client) survival() *survival {
	if c.surv == nil {
		c.surv = &survival{blocked: newLRU(), tats: newLRU()}
	}
	return c.surv
}

// fallbackKeys is the most keys the fallback limiter keeps (least recently
// used dropped first).
const fallbackKeys = 10000

type survival struct {
	cacheSize  int
	cacheMax   time.Duration
	instances  int
	probeEvery time.Duration

	mu        sync.Mutex
	blocked   *lru // ident -> blockedEntry
	tats      *lru // ident -> time.Time, the fallback GCRA's theoretical arrival
	down      error
	downUntil time.Time
}

type blockedEntry struct {
	until, retryAt, resetAt time.Time
	never                   bool
	amount, limit           int64
}

// ticket is a covered call: its command, key and arguments without the amount
// (what the cache and the fallback key on), the amount's word and the amount.
type ticket struct {
	ident  string
	kind   string
	amount int64
}

func (s *survival) ticket(k *call) (ticket, bool) {
	// Both apply to the table's plain rates (one key, one rate and an exact
	// retry_after); other commands, pipelines and shadow calls reach the server.
	if !plainRates[k.cmd.name] || k.err != nil || k.shadow {
		return ticket{}, false
	}
	args := (*k.dst)[k.start+3 : k.end]
	t := ticket{kind: "COST", amount: 1}
	var b strings.Builder
	b.WriteString(k.cmd.name)
	for i := 0; i < len(args); i++ {
		w, _ := args[i].(string)
		switch {
		case w == "DELAY":
			return ticket{}, false
		case (w == "COST" || w == "REFUND" || w == "DEBIT") && i+1 < len(args):
			t.kind = w
			if n, ok := args[i+1].(int64); ok {
				t.amount = n
			}
			i++
			continue
		}
		fmt.Fprintf(&b, "\x00%v", args[i])
	}
	t.ident = b.String()
	return t, true
}

func ceilMs(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return (d + time.Millisecond - 1) / time.Millisecond * time.Millisecond
}

// before gives a decision made here: the fallback's while the server is down
// and no probe is due, or a cached rejection.
func (s *survival) before(t ticket, limit int64, window time.Duration) (Decision, bool) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down != nil && s.instances > 0 {
		if now.Before(s.downUntil) {
			return s.fallback(t, limit, window, now, s.down), true
		}
		s.downUntil = now.Add(s.probeEvery) // this call probes; the others stay local
	}
	if s.cacheSize <= 0 {
		return Decision{}, false
	}
	if t.kind != "COST" || t.amount == 0 {
		s.blocked.remove(t.ident) // Cost 0, Refund and Debit end the entry
		return Decision{}, false
	}
	v, ok := s.blocked.get(t.ident)
	if !ok {
		return Decision{}, false
	}
	e := v.(blockedEntry)
	if !now.Before(e.until) {
		s.blocked.remove(t.ident)
		return Decision{}, false
	}
	if t.amount < e.amount {
		return Decision{}, false
	}
	d := Decision{Limit: e.limit, RetryAfter: Never, ResetAfter: ceilMs(e.resetAt.Sub(now)), Window: window, Cached: true}
	if !e.never {
		d.RetryAfter = ceilMs(e.retryAt.Sub(now))
	}
	return d, true
}

// up notes that the server answered (an error reply too): calls go to it again.
func (s *survival) up() {
	s.mu.Lock()
	s.down = nil
	s.mu.Unlock()
}

// answered takes the server's decision: the server is up; a rejection is cached.
func (s *survival) answered(t ticket, d Decision) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = nil
	if s.cacheSize <= 0 || d.Allowed || t.kind != "COST" || t.amount <= 0 {
		return
	}
	e := blockedEntry{resetAt: now.Add(d.ResetAfter), amount: t.amount, limit: d.Limit, never: d.RetryAfter == Never}
	hold := s.cacheMax
	if !e.never {
		e.retryAt = now.Add(d.RetryAfter)
		if d.RetryAfter < hold {
			hold = d.RetryAfter
		}
	}
	if hold > 0 {
		e.until = now.Add(hold)
		s.blocked.put(t.ident, e, s.cacheSize)
	}
}

// failed is the fallback's decision for a call the server did not answer.
func (s *survival) failed(t ticket, limit int64, window time.Duration, err error) (Decision, bool) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.instances <= 0 {
		return Decision{}, false
	}
	s.down, s.downUntil = err, now.Add(s.probeEvery)
	return s.fallback(t, limit, window, now, err), true
}

// fallback is GCRA at this instance's share: n = limit / instances units per
// window, in bursts of up to n. Called with mu held.
func (s *survival) fallback(t ticket, limit int64, window time.Duration, now time.Time, err error) Decision {
	n := limit / int64(s.instances)
	if n < 1 {
		n = 1
	}
	step := float64(window) / float64(n)
	tat := now
	if v, ok := s.tats.get(t.ident); ok && v.(time.Time).After(now) {
		tat = v.(time.Time)
	}
	cost := time.Duration(float64(t.amount) * step)
	allowed := true
	switch {
	case t.kind == "REFUND":
		if tat = tat.Add(-cost); tat.Before(now) {
			tat = now
		}
	case t.kind == "DEBIT" || tat.Add(cost).Sub(now) <= window:
		tat = tat.Add(cost)
	default:
		allowed = false
	}
	s.tats.put(t.ident, tat, fallbackKeys)
	ahead := tat.Sub(now)
	remaining := int64(math.Floor(float64(window-ahead)/step + 1e-6))
	if remaining < 0 {
		remaining = 0
	} else if remaining > n {
		remaining = n
	}
	d := Decision{Allowed: allowed, Limit: n, Remaining: remaining, ResetAfter: ceilMs(ahead), Window: window, Unavailable: err}
	if !allowed {
		d.RetryAfter = Never
		if t.amount <= n {
			d.RetryAfter = ceilMs(ahead + cost - window)
		}
	}
	return d
}

// decideSurviving is decide with the cache and the fallback (c.surv set).
func (c *Client) decideSurviving(ctx context.Context, k *call) (Decision, error) {
	k.seal()
	t, ok := c.surv.ticket(k)
	if !ok {
		r, err := c.send(ctx, k)
		return c.finishDecision(k, r, err)
	}
	if d, ok := c.surv.before(t, k.limit, k.window); ok {
		return d, nil
	}
	r, err := c.send(ctx, k)
	if err != nil {
		if typed, transport := classify(k.cmd.name, err); !transport {
			c.surv.up()
		} else if d, ok := c.surv.failed(t, k.limit, k.window, typed); ok {
			return d, nil
		}
		return c.finishDecision(k, r, err)
	}
	d, err := c.finishDecision(k, r, nil)
	if err == nil {
		c.surv.answered(t, d)
	}
	return d, err
}

// lru is a map that drops its least recently used entry past a size.
type lru struct {
	order *list.List // of lruItem, most recent first
	items map[string]*list.Element
}

type lruItem struct {
	key string
	val any
}

func newLRU() *lru { return &lru{order: list.New(), items: map[string]*list.Element{}} }

func (l *lru) get(key string) (any, bool) {
	e, ok := l.items[key]
	if !ok {
		return nil, false
	}
	return e.Value.(lruItem).val, true
}

func (l *lru) put(key string, val any, size int) {
	if e, ok := l.items[key]; ok {
		e.Value = lruItem{key, val}
		l.order.MoveToFront(e)
		return
	}
	l.items[key] = l.order.PushFront(lruItem{key, val})
	if l.order.Len() > size {
		last := l.order.Back()
		l.order.Remove(last)
		delete(l.items, last.Value.(lruItem).key)
	}
}

func (l *lru) remove(key string) {
	if e, ok := l.items[key]; ok {
		l.order.Remove(e)
		delete(l.items, key)
	}
}
