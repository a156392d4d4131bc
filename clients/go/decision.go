package rl

import (
	"fmt"
	"strconv"
	"time"
)

// Never is Decision.RetryAfter when the same call can never be allowed: its
// cost is more than the limit (RL's retry_after -1).
const Never time.Duration = -1

// Decision is the typed reply of every RL call: [allowed, limit, remaining,
// retry_after_ms, reset_after_ms].
type Decision struct {
	// Allowed: the call was accepted and its cost taken. False: rejected,
	// nothing taken.
	Allowed bool
	// Limit of this call (a bucket's capacity, a penalty's strikes).
	Limit int64
	// Remaining units that could still be taken now, after this call.
	Remaining int64
	// RetryAfter is 0 when allowed (with DELAY: how long to wait before
	// acting); when rejected, how long until the same call would be allowed
	// if nothing else happens, or Never.
	RetryAfter time.Duration
	// ResetAfter is how long until the limiter is back to its initial state
	// (Remaining = Limit) if nothing else happens.
	ResetAfter time.Duration
	// Window is the w of the RateLimit-Policy header: the call's window
	// (Fixed, Sliding, SlidingCounter, Penalty) or ttl (Acquire); for a
	// bucket (Bucket, GCRA, Share, Throttle) the time it takes to refill from
	// empty, ceil(capacity * period / tokens) in whole ms (Throttle: capacity
	// maxBurst + 1, tokens count), at most about 292 years; 0 when the client
	// cannot know it (w is then left out).
	Window time.Duration
	// Unavailable is set, with Allowed decided by the client's fail mode
	// (WithFailOpen, WithFailClosed), when Redis could not be reached: the
	// connection error. Nil on every decision the server made.
	Unavailable error
	// Cached is set on a rejection the client's cache of blocked keys gave
	// without asking the server (WithCache); RetryAfter is what is left of
	// the server's.
	Cached bool
	// Shadow is set when the call (or, in an AllDecision's Keys, the policy)
	// had the Shadow option: the limit is being tried, not enforced. The other
	// fields are what it decided, so a Shadow decision that is not Allowed
	// means "would have rejected": log it, do not act on it. It gives no HTTP
	// fields. An AllDecision's combined decision is never Shadow: it is the
	// enforced policies'.
	Shadow bool
}

// Retryable reports whether a rejected call can pass later (RetryAfter is not
// Never).
func (d Decision) Retryable() bool { return d.RetryAfter != Never }

// String is for logs: "allowed limit=5 remaining=4 retry_after=0s reset_after=1s".
func (d Decision) String() string {
	verdict := "allowed"
	if !d.Allowed {
		verdict = "rejected"
	}
	retry := d.RetryAfter.String()
	if d.RetryAfter == Never {
		retry = "never"
	}
	s := fmt.Sprintf("%s limit=%d remaining=%d retry_after=%s reset_after=%s",
		verdict, d.Limit, d.Remaining, retry, d.ResetAfter)
	if d.Shadow {
		s += " (shadow)"
	}
	if d.Unavailable != nil {
		s += " (redis unavailable: " + d.Unavailable.Error() + ")"
	}
	return s
}

// AllDecision is RL.ALL's reply: the combined decision (embedded: Allowed is
// true when every enforced key allowed; Limit and Remaining are those of the
// enforced key with the least remaining) and each key's own, in key order,
// Shadow set on those whose policy had the Shadow option.
type AllDecision struct {
	Decision
	Keys []Decision

	names []string // each key's name in the RateLimit fields
}

func toInt64(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case uint64:
		if x > 1<<63-1 {
			return 0, false
		}
		return int64(x), true
	case []byte:
		n, err := strconv.ParseInt(string(x), 10, 64)
		return n, err == nil
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	return 0, false
}

func replyError(cmd string, reply any) error {
	return fmt.Errorf("rl: %s: unexpected reply %#v (is this server running RL?)", cmd, reply)
}

// parseDecision reads a five-integer reply.
func parseDecision(cmd string, reply any, window time.Duration) (Decision, error) {
	a, ok := reply.([]any)
	if !ok || len(a) != 5 {
		return Decision{}, replyError(cmd, reply)
	}
	var n [5]int64
	for i, v := range a {
		if n[i], ok = toInt64(v); !ok {
			return Decision{}, replyError(cmd, reply)
		}
	}
	d := Decision{Allowed: n[0] == 1, Limit: n[1], Remaining: n[2], ResetAfter: msDuration(n[4]), Window: window}
	if n[3] < 0 {
		d.RetryAfter = Never
	} else {
		d.RetryAfter = msDuration(n[3])
	}
	return d, nil
}

// parseThrottle reads CL.THROTTLE's [limited, limit, remaining, retry_after_s,
// reset_after_s].
func parseThrottle(cmd string, reply any, window time.Duration) (Decision, error) {
	d, err := parseDecision(cmd, reply, window)
	if err != nil {
		return d, err
	}
	d.Allowed = !d.Allowed // limited 0 is allowed
	a := reply.([]any)
	retry, _ := toInt64(a[3])
	reset, _ := toInt64(a[4])
	switch {
	case d.Allowed:
		d.RetryAfter = 0
	case retry < 0:
		d.RetryAfter = Never
	default:
		d.RetryAfter = msDuration(retry * 1000)
	}
	d.ResetAfter = msDuration(reset * 1000)
	return d, nil
}

// parseAll reads RL.ALL's numkeys + 1 decisions, each key's with its
// policy's window.
func parseAll(cmd string, reply any, keys []Policy) (AllDecision, error) {
	a, ok := reply.([]any)
	if !ok || len(a) != len(keys)+1 {
		return AllDecision{}, replyError(cmd, reply)
	}
	out := AllDecision{Keys: make([]Decision, len(keys))}
	for i, p := range keys {
		d, err := parseDecision(cmd, a[i+1], p.window)
		if err != nil {
			return AllDecision{}, err
		}
		d.Shadow = p.shadow
		out.Keys[i] = d
	}
	d, err := parseDecision(cmd, a[0], 0)
	if err != nil {
		return AllDecision{}, err
	}
	// The combined limit and remaining are the first enforced key's with the
	// least remaining (any key's when all are shadow): its window is the
	// combined one.
	enforced := firstEnforced(keys) >= 0
	for _, k := range out.Keys {
		if k.Remaining == d.Remaining && k.Limit == d.Limit && (!k.Shadow || !enforced) {
			d.Window = k.Window
			break
		}
	}
	out.Decision = d
	return out, nil
}

func parseReleased(cmd string, reply any) (bool, error) {
	n, ok := toInt64(reply)
	if !ok || (n != 0 && n != 1) {
		return false, replyError(cmd, reply)
	}
	return n == 1, nil
}
